// LAYERNORM_FORWARD/BACKWARD and (ABI 1.6) RESIDUAL_LAYERNORM_FORWARD/
// BACKWARD: one block per row, row statistics in double like the CPU
// reference; the row kernels are compiled per storage type (operands of one
// dtype) and chosen once per launch. The fused forward writes the rounded
// sum and normalises it in the same pass (each thread reads back only the
// elements it wrote); the fused backward adds the incoming residual gradient
// to dx before its one rounding. The weight and bias gradients are
// deterministic column sums (reduce.h), taken before dx so that dx may alias
// dy (and dsum).
#include <cuda_runtime.h>
#include <math.h>

#include "plugins/backends/common/tensor_access.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/reduce.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// Normalises row r of x into y and saves its mean and rstd (the whole block).
template <typename S>
__device__ void NormalizeRow(DevTensor x, DevTensor w, DevTensor b, DevTensor y,
                             float* mean, float* rstd, int64_t r, int64_t c, float eps) {
  const int64_t base = r * c;
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) sum += Load<S>(x, base + j);
  const double mu = BlockReduce(sum, SumOp(), 0.0) / c;
  double sq = 0.0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    const double d = Load<S>(x, base + j) - mu;
    sq += d * d;
  }
  sq = BlockReduce(sq, SumOp(), 0.0);
  const float m = static_cast<float>(mu);
  const float rs = static_cast<float>(1.0 / sqrt(sq / c + eps));
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    Store<S>(y, base + j, (Load<S>(x, base + j) - m) * rs * Load<S>(w, j) + Load<S>(b, j));
  }
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

template <typename S>
__global__ void LayerNormForwardKernel(DevTensor x, DevTensor w, DevTensor b,
                                       DevTensor y, float* mean, float* rstd,
                                       int64_t rows, int64_t c, float eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    NormalizeRow<S>(x, w, b, y, mean, rstd, r, c, eps);
  }
}

// sum = x + res rounded to sum's storage, then the norm of the stored sum.
// The norm's loops give element j to the same thread as this one, so each
// thread reads back only what it wrote (sum may alias x or res).
template <typename S>
__global__ void ResidualLayerNormForwardKernel(DevTensor x, DevTensor res, DevTensor w,
                                               DevTensor b, DevTensor sum, DevTensor y,
                                               float* mean, float* rstd, int64_t rows,
                                               int64_t c, float eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * c;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      Store<S>(sum, base + j, Load<S>(x, base + j) + Load<S>(res, base + j));
    }
    NormalizeRow<S>(sum, w, b, y, mean, rstd, r, c, eps);
  }
}

// dx = (dsum when present) + the norm's input gradient, rounded once.
template <typename S>
__global__ void LayerNormBackwardInputKernel(DevTensor dy, DevTensor x,
                                             DevTensor w, const float* mean,
                                             const float* rstd, DevTensor dsum,
                                             DevTensor dx, int64_t rows, int64_t c) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * c;
    const float m = mean[r], rs = rstd[r];
    double s1 = 0.0, s2 = 0.0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const float xhat = (Load<S>(x, base + j) - m) * rs;
      const float dxhat = Load<S>(dy, base + j) * Load<S>(w, j);
      s1 += dxhat;
      s2 += static_cast<double>(dxhat) * xhat;
    }
    s1 = BlockReduce(s1, SumOp(), 0.0);
    s2 = BlockReduce(s2, SumOp(), 0.0);
    const float a = static_cast<float>(s1 / c), bcoef = static_cast<float>(s2 / c);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const float xhat = (Load<S>(x, base + j) - m) * rs;
      const float dxhat = Load<S>(dy, base + j) * Load<S>(w, j);
      const float g = LayerNormInputGradient(dxhat, xhat, a, bcoef, rs);
      Store<S>(dx, base + j, dsum.data != nullptr ? Load<S>(dsum, base + j) + g : g);
    }
  }
}

}  // namespace

Status CudaBackend::LayerNormForward(const backend::LayerNormForwardCall& l) {
  if (l.rows == 0) return Status::Ok();
  const DevTensor x = Dev(l.x), w = Dev(l.weight), b = Dev(l.bias), y = Dev(l.y);
  const cudaError_t err =
      WithStorage(CommonDType({x.dtype, w.dtype, b.dtype, y.dtype}), [&](auto storage) {
        return Launch(LayerNormForwardKernel<decltype(storage)>, RowGrid(l.rows), kThreads, 0,
                      stream, x, w, b, y, l.mean.f32(), l.rstd.f32(), l.rows, l.c, l.epsilon);
      });
  return Launched(l, err, "layernorm_forward");
}

namespace {

// The backward shared by LAYERNORM_BACKWARD and RESIDUAL_LAYERNORM_BACKWARD.
template <typename Call>
Status Backward(CudaBackend& be, const Call& l, const Operand& dsum_operand) {
  // Parameter gradients first: dx may alias dy (not promised by the ABI, but
  // cheap to keep safe).
  Scratch partials(be);
  MNT_RETURN_IF_ERROR(
      partials.Allocate(sizeof(double) * 2 * ColumnSumChunks(l.rows) * l.c));
  MNT_RETURN_IF_ERROR(Launched(
      l,
      LaunchColumnSums(be.stream, Dev(l.dy), Dev(l.x), l.mean.f32(), l.rstd.f32(),
                       Dev(l.dweight), Dev(l.dbias), l.rows, l.c, l.accumulate,
                       static_cast<double*>(partials.data())),
      "layernorm_param_grads"));
  if (l.rows == 0) return Status::Ok();
  const DevTensor dy = Dev(l.dy), x = Dev(l.x), w = Dev(l.weight), dx = Dev(l.dx),
                  dsum = Dev(dsum_operand);
  const cudaError_t err = WithStorage(
      CommonDType({dy.dtype, x.dtype, w.dtype, dx.dtype, dsum.dtype}), [&](auto storage) {
        return Launch(LayerNormBackwardInputKernel<decltype(storage)>, RowGrid(l.rows),
                      kThreads, 0, be.stream, dy, x, w, l.mean.f32(), l.rstd.f32(), dsum, dx,
                      l.rows, l.c);
      });
  return Launched(l, err, "layernorm_backward_input");
}

}  // namespace

Status CudaBackend::LayerNormBackward(const backend::LayerNormBackwardCall& l) {
  return Backward(*this, l, Operand{});
}

Status CudaBackend::ResidualLayerNormForward(
    const backend::ResidualLayerNormForwardCall& l) {
  if (l.rows == 0) return Status::Ok();
  const DevTensor x = Dev(l.x), res = Dev(l.r), w = Dev(l.weight), b = Dev(l.bias),
                  sum = Dev(l.sum), y = Dev(l.y);
  const cudaError_t err = WithStorage(
      CommonDType({x.dtype, res.dtype, w.dtype, b.dtype, sum.dtype, y.dtype}),
      [&](auto storage) {
        return Launch(ResidualLayerNormForwardKernel<decltype(storage)>, RowGrid(l.rows),
                      kThreads, 0, stream, x, res, w, b, sum, y, l.mean.f32(), l.rstd.f32(),
                      l.rows, l.c, l.epsilon);
      });
  return Launched(l, err, "residual_layernorm_forward");
}

Status CudaBackend::ResidualLayerNormBackward(
    const backend::ResidualLayerNormBackwardCall& l) {
  return Backward(*this, l, l.dsum);
}

}  // namespace mnt::cuda

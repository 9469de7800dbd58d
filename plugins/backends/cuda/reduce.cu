// BIAS_GRAD, REDUCE, GLOBAL_NORM_SQUARED and NONFINITE_CHECK_UNSCALE, all
// deterministic: a reduction writes one double partial per block of a fixed
// grid (fixed-order tree inside the block), then one block combines the
// partials in a fixed order; column sums run in fixed row chunks. inv_scale
// and found_inf stay on the device, so the unscale needs no host round trip.
#include <cuda_runtime.h>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/reduce.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// ---- Whole-tensor reductions -------------------------------------------------

enum class ReduceOp { kSum, kSumSquares, kMax };

constexpr int64_t kElementsPerBlock = kThreads * 8;
constexpr int64_t kMaxPartials = 1024;

__device__ inline double Identity(ReduceOp op) {
  return op == ReduceOp::kMax ? -INFINITY : 0.0;
}

__device__ inline double Combine(ReduceOp op, double a, double b) {
  return op == ReduceOp::kMax ? NanMaxOp()(a, b) : a + b;
}

template <ReduceOp kOp>
struct CombineOp {
  __device__ double operator()(double a, double b) const { return Combine(kOp, a, b); }
};

template <ReduceOp kOp, typename S>
__global__ void PartialsKernel(DevTensor x, int64_t n, double* partials) {
  double acc = Identity(kOp);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double v = Load<S>(x, i);
    acc = Combine(kOp, acc, kOp == ReduceOp::kSumSquares ? v * v : v);
  }
  acc = BlockReduce(acc, CombineOp<kOp == ReduceOp::kMax ? ReduceOp::kMax : ReduceOp::kSum>(),
                    Identity(kOp));
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <ReduceOp kOp>
__global__ void FinishKernel(const double* partials, int64_t count, double divisor,
                             float* out) {
  double acc = Identity(kOp);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    acc = Combine(kOp, acc, partials[i]);
  }
  acc = BlockReduce(acc, CombineOp<kOp>(), Identity(kOp));
  if (threadIdx.x == 0) *out = static_cast<float>(acc / divisor);
}

// Number of double partials pass 1 writes for n elements (0 for n == 0).
int64_t ReducePartialCount(int64_t n) {
  if (n <= 0) return 0;
  const int64_t blocks = (n + kElementsPerBlock - 1) / kElementsPerBlock;
  return blocks < kMaxPartials ? blocks : kMaxPartials;
}

cudaError_t LaunchReducePartials(cudaStream_t s, DevTensor x, int64_t n, ReduceOp op,
                                 double* partials) {
  const int64_t blocks = ReducePartialCount(n);
  if (blocks == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(blocks);
  return WithStorage(x.dtype, [&](auto storage) {
    using S = decltype(storage);
    switch (op) {
      case ReduceOp::kSum:
        return Launch(PartialsKernel<ReduceOp::kSum, S>, grid, kThreads, 0, s, x, n, partials);
      case ReduceOp::kSumSquares:
        return Launch(PartialsKernel<ReduceOp::kSumSquares, S>, grid, kThreads, 0, s, x, n,
                      partials);
      case ReduceOp::kMax:
        return Launch(PartialsKernel<ReduceOp::kMax, S>, grid, kThreads, 0, s, x, n, partials);
    }
    return cudaErrorInvalidValue;  // not a ReduceOp
  });
}

// out = combine(partials[0..count)) / divisor, in a fixed order.
cudaError_t LaunchReduceFinish(cudaStream_t s, const double* partials, int64_t count,
                               ReduceOp op, double divisor, float* out) {
  if (op == ReduceOp::kMax) {
    return Launch(FinishKernel<ReduceOp::kMax>, 1, kThreads, 0, s, partials, count, divisor,
                  out);
  }
  return Launch(FinishKernel<ReduceOp::kSum>, 1, kThreads, 0, s, partials, count, divisor,
                out);
}

// ---- Column sums ---------------------------------------------------------------

constexpr int64_t kRowsPerChunk = 64;
constexpr int64_t kMaxChunks = 256;

// Pass 1: partial column sums over one chunk of rows. With x != NULL also the
// layer-norm weight gradient sum(dy * xhat) into partials_w.
template <typename S>
__global__ void ColumnPartialsKernel(DevTensor dy, DevTensor x, const float* mean,
                                     const float* rstd, int64_t rows, int64_t c,
                                     int64_t chunks, double* partials_b,
                                     double* partials_w) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= c) return;
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * per_chunk;
  const int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
  double sb = 0.0, sw = 0.0;
  for (int64_t r = r0; r < r1; ++r) {
    const float g = Load<S>(dy, r * c + col);
    sb += g;
    if (x.data != nullptr) {
      const float xhat = (Load<S>(x, r * c + col) - mean[r]) * rstd[r];
      sw += static_cast<double>(g) * xhat;
    }
  }
  partials_b[chunk * c + col] = sb;
  if (x.data != nullptr) partials_w[chunk * c + col] = sw;
}

// Pass 2: chunks summed in order; out = (accumulate ? out : 0) + float(sum).
template <typename S>
__global__ void ColumnFinishKernel(const double* partials, int64_t chunks, int64_t c,
                                   DevTensor out, bool accumulate) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= c) return;
  double s = 0.0;
  for (int64_t k = 0; k < chunks; ++k) s += partials[k * c + col];
  const float old = accumulate ? Load<S>(out, col) : 0.0f;
  Store<S>(out, col, old + static_cast<float>(s));
}

// ---- Unscale -------------------------------------------------------------------

template <typename S>
struct UnscaleBody {
  const float* inv_scale;
  DevTensor in, out;
  float* found_inf;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float v[4];
    Load4<S>(in, i, count, vec, v);
    const float inv = *inv_scale;
    bool found = false;
    for (int k = 0; k < count; ++k) v[k] = UnscaleAndCheck(v[k], inv, &found);
    // Every writer stores the same value, so the race is benign.
    if (found) *found_inf = 1.0f;
    Store4<S>(out, i, count, vec, v);
  }
};

}  // namespace

int64_t ColumnSumChunks(int64_t rows) {
  int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  if (chunks < 1) chunks = 1;
  return chunks > kMaxChunks ? kMaxChunks : chunks;
}

cudaError_t LaunchColumnSums(cudaStream_t s, DevTensor dy, DevTensor x,
                             const float* mean, const float* rstd, DevTensor dw,
                             DevTensor db, int64_t rows, int64_t c, bool accumulate,
                             double* partials) {
  if (c <= 0) return cudaSuccess;
  const int64_t chunks = ColumnSumChunks(rows);
  double* partials_b = partials;
  double* partials_w = partials + chunks * c;
  const dim3 grid(GridFor(c, kThreads), static_cast<unsigned>(chunks));
  cudaError_t err = WithStorage(CommonDType({dy.dtype, x.dtype}), [&](auto storage) {
    return Launch(ColumnPartialsKernel<decltype(storage)>, grid, kThreads, 0, s, dy, x, mean,
                  rstd, rows, c, chunks, partials_b, partials_w);
  });
  if (err != cudaSuccess) return err;
  auto finish = [&](const double* part, DevTensor out) {
    return WithStorage(out.dtype, [&](auto storage) {
      return Launch(ColumnFinishKernel<decltype(storage)>, GridFor(c, kThreads), kThreads, 0,
                    s, part, chunks, c, out, accumulate);
    });
  };
  err = finish(partials_b, db);
  if (err != cudaSuccess || dw.data == nullptr) return err;
  return finish(partials_w, dw);
}

Status CudaBackend::BiasGrad(const backend::BiasGradCall& c) {
  if (c.n == 0) return Status::Ok();
  Scratch partials(*this);
  MNT_RETURN_IF_ERROR(
      partials.Allocate(sizeof(double) * 2 * ColumnSumChunks(c.rows) * c.n));
  return Launched(c,
                  LaunchColumnSums(stream, Dev(c.dy), DevTensor{}, nullptr, nullptr,
                                   DevTensor{}, Dev(c.db), c.rows, c.n, c.accumulate,
                                   static_cast<double*>(partials.data())),
                  "bias_grad");
}

Status CudaBackend::Reduce(const backend::ReduceCall& c) {
  const ReduceOp op = c.kind == MNT_REDUCE_MAX ? ReduceOp::kMax : ReduceOp::kSum;
  const int64_t count = ReducePartialCount(c.n);
  Scratch partials(*this);
  MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(double) * count));
  double* part = static_cast<double*>(partials.data());
  MNT_RETURN_IF_ERROR(
      Launched(c, LaunchReducePartials(stream, Dev(c.x), c.n, op, part), "reduce"));
  const double divisor = c.kind == MNT_REDUCE_MEAN ? static_cast<double>(c.n) : 1.0;
  return Launched(c, LaunchReduceFinish(stream, part, count, op, divisor, c.out.f32()),
                  "reduce_finish");
}

Status CudaBackend::GlobalNormSquared(const backend::GlobalNormSquaredCall& c) {
  int64_t total = 0;
  for (const Operand& x : c.inputs) total += ReducePartialCount(sdk::NumElements(*x));
  // Partials of all inputs side by side, combined once: one fixed order.
  Scratch partials(*this);
  MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(double) * total));
  double* part = static_cast<double*>(partials.data());
  int64_t offset = 0;
  for (const Operand& x : c.inputs) {
    const int64_t n = sdk::NumElements(*x);
    MNT_RETURN_IF_ERROR(Launched(
        c, LaunchReducePartials(stream, Dev(x), n, ReduceOp::kSumSquares, part + offset),
        "sum_squares"));
    offset += ReducePartialCount(n);
  }
  return Launched(c,
                  LaunchReduceFinish(stream, part, total, ReduceOp::kSum, 1.0, c.out.f32()),
                  "reduce_finish");
}

Status CudaBackend::NonfiniteCheckUnscale(const backend::NonfiniteCheckUnscaleCall& c) {
  for (const auto& g : c.gradients) {
    const DevTensor in = Dev(g.grad), out = Dev(g.out);
    const bool vec = Aligned16(in.data) && Aligned16(out.data);
    const cudaError_t err = WithStorage(CommonDType({in.dtype, out.dtype}), [&](auto storage) {
      using Body = UnscaleBody<decltype(storage)>;
      return LaunchMap4(stream, Body{c.inv_scale.f32(), in, out, c.found_inf.f32()}, g.n, vec);
    });
    MNT_RETURN_IF_ERROR(Launched(c, err, "unscale"));
  }
  return Status::Ok();
}

}  // namespace mnt::cuda

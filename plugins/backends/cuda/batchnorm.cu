// BATCHNORM_FORWARD/BACKWARD: one block per channel for the statistics
// (accumulated in double, as the CPU reference), then one thread per element.
// Deterministic: every sum runs in a fixed order. Kernels are compiled per
// pair of storage types -- A for the activations (x, y, dy, dx), P for the
// per-channel parameters and their gradients -- and chosen once per launch.
#include <cuda_runtime.h>
#include <math.h>

#include <initializer_list>
#include <utility>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

// One block per channel: batch mean and biased variance (double), the saved
// statistics and the running-statistics update.
template <typename A>
__global__ void BatchNormTrainStatsKernel(DevTensor x, int64_t n, int64_t c,
                                          int64_t inner, float momentum,
                                          float epsilon, float* running_mean,
                                          float* running_var, float* mean,
                                          float* invstd) {
  const int64_t ch = blockIdx.x, count = n * inner;
  double sum = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    sum += Load<A>(x, ChannelElement(k, ch, c, inner));
  }
  const double mu = BlockReduce(sum, SumOp(), 0.0) / count;
  double sq = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const double dev = Load<A>(x, ChannelElement(k, ch, c, inner)) - mu;
    sq += dev * dev;
  }
  sq = BlockReduce(sq, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    mean[ch] = static_cast<float>(mu);
    invstd[ch] = static_cast<float>(1.0 / sqrt(sq / count + epsilon));
    const double m = momentum;
    running_mean[ch] = static_cast<float>((1.0 - m) * running_mean[ch] + m * mu);
    running_var[ch] =
        static_cast<float>((1.0 - m) * running_var[ch] + m * (sq / (count - 1)));
  }
}

__global__ void BatchNormInferStatsKernel(const float* running_mean,
                                          const float* running_var, int64_t c,
                                          float epsilon, float* mean, float* invstd) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c;
       ch += int64_t{gridDim.x} * blockDim.x) {
    mean[ch] = running_mean[ch];
    invstd[ch] = static_cast<float>(
        1.0 / sqrt(static_cast<double>(running_var[ch]) + epsilon));
  }
}

template <typename A, typename P>
__global__ void BatchNormApplyKernel(DevTensor x, DevTensor gamma, DevTensor beta,
                                     const float* mean, const float* invstd,
                                     DevTensor y, int64_t total, int64_t c,
                                     int64_t inner) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (idx / inner) % c;
    const float scale = invstd[ch] * Load<P>(gamma, ch);
    Store<A>(y, idx, (Load<A>(x, idx) - mean[ch]) * scale + Load<P>(beta, ch));
  }
}

// One block per channel: sum dy and sum dy * xhat (double); dgamma/dbeta and
// the two means the input gradient needs (sums[2 * ch], sums[2 * ch + 1]).
template <typename A, typename P>
__global__ void BatchNormGradSumsKernel(DevTensor dy, DevTensor x, const float* mean,
                                        const float* invstd, int64_t n, int64_t c,
                                        int64_t inner, bool accumulate,
                                        DevTensor dgamma, DevTensor dbeta,
                                        double* sums) {
  const int64_t ch = blockIdx.x, count = n * inner;
  const float mu = mean[ch];
  const double is = invstd[ch];
  double s_dy = 0.0, s_dyx = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t e = ChannelElement(k, ch, c, inner);
    const float g = Load<A>(dy, e);
    s_dy += g;
    s_dyx += g * ((Load<A>(x, e) - mu) * is);
  }
  s_dy = BlockReduce(s_dy, SumOp(), 0.0);
  s_dyx = BlockReduce(s_dyx, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    sums[2 * ch] = s_dy / count;
    sums[2 * ch + 1] = s_dyx / count;
    const float dg = accumulate ? Load<P>(dgamma, ch) : 0.0f;
    const float db = accumulate ? Load<P>(dbeta, ch) : 0.0f;
    Store<P>(dgamma, ch, dg + static_cast<float>(s_dyx));
    Store<P>(dbeta, ch, db + static_cast<float>(s_dy));
  }
}

template <typename A, typename P>
__global__ void BatchNormInputGradKernel(DevTensor dy, DevTensor x, DevTensor gamma,
                                         const float* mean, const float* invstd,
                                         const double* sums, DevTensor dx,
                                         int64_t total, int64_t c, int64_t inner) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (idx / inner) % c;
    Store<A>(dx, idx,
          BatchNormInputGrad(Load<A>(dy, idx), Load<A>(x, idx), mean[ch], invstd[ch],
                             Load<P>(gamma, ch), sums[2 * ch], sums[2 * ch + 1]));
  }
}

// f(A{}, P{}) for the activations' and the parameters' storage types
// (AnyStorage for both when either group mixes dtypes).
template <typename F>
cudaError_t WithBatchNormStorages(std::initializer_list<MNT_DType> activations,
                                  std::initializer_list<MNT_DType> params, F&& f) {
  return WithStoragePair(CommonDType(activations), CommonDType(params), std::forward<F>(f));
}

}  // namespace

Status CudaBackend::BatchNormForward(const backend::BatchNormForwardCall& b) {
  const backend::BatchNormShape& d = b.shape;
  if (d.c == 0) return Status::Ok();
  // Inference normalises with statistics derived into scratch.
  Scratch stats(*this);
  float *mean, *invstd;
  if (d.training) {
    mean = b.saved_mean.f32();
    invstd = b.saved_invstd.f32();
    const cudaError_t err = WithStorage(b.x->dtype, [&](auto storage) {
      return Launch(BatchNormTrainStatsKernel<decltype(storage)>, static_cast<unsigned>(d.c),
                    kThreads, 0, stream, Dev(b.x), d.n, d.c, d.inner, d.momentum, d.epsilon,
                    b.running_mean.f32(), b.running_var.f32(), mean, invstd);
    });
    MNT_RETURN_IF_ERROR(Launched(b, err, "batchnorm_train_stats"));
  } else {
    MNT_RETURN_IF_ERROR(stats.Allocate(sizeof(float) * 2 * d.c));
    mean = static_cast<float*>(stats.data());
    invstd = mean + d.c;
    MNT_RETURN_IF_ERROR(Launched(
        b,
        Launch(BatchNormInferStatsKernel, GridFor(d.c, kThreads), kThreads, 0, stream,
               b.running_mean.f32(), b.running_var.f32(), d.c, d.epsilon, mean, invstd),
        "batchnorm_infer_stats"));
  }
  const int64_t total = d.n * d.c * d.inner;
  if (total == 0) return Status::Ok();
  const cudaError_t err = WithBatchNormStorages(
      {b.x->dtype, b.y->dtype}, {b.gamma->dtype, b.beta->dtype}, [&](auto as, auto ps) {
        return Launch(BatchNormApplyKernel<decltype(as), decltype(ps)>,
                      GridFor(total, kThreads), kThreads, 0, stream, Dev(b.x), Dev(b.gamma),
                      Dev(b.beta), static_cast<const float*>(mean),
                      static_cast<const float*>(invstd), Dev(b.y), total, d.c, d.inner);
      });
  return Launched(b, err, "batchnorm_apply");
}

Status CudaBackend::BatchNormBackward(const backend::BatchNormBackwardCall& b) {
  const backend::BatchNormShape& d = b.shape;
  if (d.c == 0) return Status::Ok();
  Scratch sums(*this);  // per channel: mean(dy), mean(dy * xhat)
  MNT_RETURN_IF_ERROR(sums.Allocate(sizeof(double) * 2 * d.c));
  double* s = static_cast<double*>(sums.data());
  const cudaError_t sums_err = WithBatchNormStorages(
      {b.dy->dtype, b.x->dtype}, {b.dgamma->dtype, b.dbeta->dtype}, [&](auto as, auto ps) {
        return Launch(BatchNormGradSumsKernel<decltype(as), decltype(ps)>,
                      static_cast<unsigned>(d.c), kThreads, 0, stream, Dev(b.dy), Dev(b.x),
                      static_cast<const float*>(b.saved_mean.f32()),
                      static_cast<const float*>(b.saved_invstd.f32()), d.n, d.c, d.inner,
                      b.accumulate, Dev(b.dgamma), Dev(b.dbeta), s);
      });
  MNT_RETURN_IF_ERROR(Launched(b, sums_err, "batchnorm_grad_sums"));
  const int64_t total = d.n * d.c * d.inner;
  if (total == 0) return Status::Ok();
  const cudaError_t err = WithBatchNormStorages(
      {b.dy->dtype, b.x->dtype, b.dx->dtype}, {b.gamma->dtype}, [&](auto as, auto ps) {
        return Launch(BatchNormInputGradKernel<decltype(as), decltype(ps)>,
                      GridFor(total, kThreads), kThreads, 0, stream, Dev(b.dy), Dev(b.x),
                      Dev(b.gamma), static_cast<const float*>(b.saved_mean.f32()),
                      static_cast<const float*>(b.saved_invstd.f32()),
                      static_cast<const double*>(s), Dev(b.dx), total, d.c, d.inner);
      });
  return Launched(b, err, "batchnorm_input_grad");
}

}  // namespace mnt::cuda

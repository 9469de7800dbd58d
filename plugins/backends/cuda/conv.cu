// Convolution's own kernels: the forward's bias add and the backward's dbias,
// per channel of an NCHW tensor viewed as [n, c, inner] (deterministic:
// fixed-order double sums). The convolutions themselves are cuDNN's
// (conv_cudnn.cc).
#include <cuda_runtime.h>

#include "plugins/backends/cuda/conv.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

namespace {

// One block per channel: out[ch] (+)= sum of x over n and inner (double).
// X, O: the storage types of x and out.
template <typename X, typename O>
__global__ void ChannelSumKernel(DevTensor x, int64_t n, int64_t c, int64_t inner,
                                 bool accumulate, DevTensor out) {
  const int64_t ch = blockIdx.x, count = n * inner;
  double sum = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    sum += Load<X>(x, ChannelElement(k, ch, c, inner));
  }
  sum = BlockReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    Store<O>(out, ch, (accumulate ? Load<O>(out, ch) : 0.0f) + static_cast<float>(sum));
  }
}

// Y, B: the storage types of y and bias.
template <typename Y, typename B>
__global__ void ChannelBiasAddKernel(DevTensor y, DevTensor bias, int64_t total,
                                     int64_t c, int64_t inner) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    Store<Y>(y, idx, Load<Y>(y, idx) + Load<B>(bias, (idx / inner) % c));
  }
}

}  // namespace

// Both kernels are compiled per pair of storage types and chosen once per
// launch (no per-element dtype switch).
cudaError_t LaunchChannelSum(cudaStream_t s, DevTensor x, int64_t n, int64_t c,
                             int64_t inner, bool accumulate, DevTensor out) {
  if (c == 0) return cudaSuccess;
  return WithStoragePair(x.dtype, out.dtype, [&](auto xs, auto os) {
    return Launch(ChannelSumKernel<decltype(xs), decltype(os)>, static_cast<unsigned>(c),
                  kThreads, 0, s, x, n, c, inner, accumulate, out);
  });
}

cudaError_t LaunchChannelBiasAdd(cudaStream_t s, DevTensor y, DevTensor bias,
                                 int64_t n, int64_t c, int64_t inner) {
  const int64_t total = n * c * inner;
  if (total == 0) return cudaSuccess;
  return WithStoragePair(y.dtype, bias.dtype, [&](auto ys, auto bs) {
    return Launch(ChannelBiasAddKernel<decltype(ys), decltype(bs)>, GridFor(total, kThreads),
                  kThreads, 0, s, y, bias, total, c, inner);
  });
}

}  // namespace mnt::cuda

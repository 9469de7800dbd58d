// Convolution's per-channel kernels (conv.cu), around cuDNN's convolutions
// (conv_cudnn.cc). Each enqueues on `s` and returns the launch status.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/backends/cuda/launch.h"

namespace mnt::cuda {

// out[ch] (+)= sum of x [n, c, inner] over n and inner (conv's dbias).
cudaError_t LaunchChannelSum(cudaStream_t s, DevTensor x, int64_t n, int64_t c,
                             int64_t inner, bool accumulate, DevTensor out);
// y [n, c, inner] += bias[c] (conv's forward bias).
cudaError_t LaunchChannelBiasAdd(cudaStream_t s, DevTensor y, DevTensor bias,
                                 int64_t n, int64_t c, int64_t inner);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_H_

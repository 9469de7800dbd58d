// The elementwise launchers other op families build on: zero-filling,
// staging an operand in another dtype (rounded to a compute format), adding
// into an output. Each enqueues on `s` and returns the launch status.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ELEMENTWISE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ELEMENTWISE_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/cuda/launch.h"

namespace mnt::cuda {

// out[0, n) = value (any float dtype or I32).
cudaError_t LaunchFill(cudaStream_t s, DevTensor out, int64_t n, double value);
// out = RoundToCompute(in, round_to) stored in out's dtype (F32: a plain
// conversion).
cudaError_t LaunchConvert(cudaStream_t s, DevTensor in, DevTensor out, int64_t n,
                          MNT_ComputeMode round_to);
// out = alpha * a + beta * b (b.data NULL: alpha * a).
cudaError_t LaunchAdd(cudaStream_t s, DevTensor a, DevTensor b, DevTensor out,
                      int64_t n, float alpha, float beta);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ELEMENTWISE_H_

// The CUDA backend plugin ("cuda"): cuBLASLt GEMMs in every compute mode and
// hand-written kernels for every other MNT_Op, a caching device allocator,
// one stream per instance and cudaEvent timing. Link
// //plugins/backends/cuda:cuda_backend_lib and call through the returned
// table, or dlopen mnt_backend_cuda.so.
//
// Backend_Create options: none (unknown keys are an error). device_ordinal
// picks the GPU. Without a usable device, Backend_Create fails with
// "cuda backend: no CUDA device available (cudaGetDeviceCount: ...)".
// Work is asynchronous on the instance's stream; errors of device-side checks
// (embedding ids, cross-entropy targets out of range) surface at the next
// Backend_Synchronize or device-to-host copy.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_CUDA_BACKEND_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_CUDA_BACKEND_H_

#include "plugins/abi/mantissa.h"

namespace mnt::cuda {

const MNT_Plugin_Api* CudaBackendPluginApi();

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_CUDA_BACKEND_H_

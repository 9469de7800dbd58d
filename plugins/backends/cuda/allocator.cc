#include "plugins/backends/cuda/allocator.h"

#include <cuda_runtime.h>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

DeviceAllocator::DeviceAllocator()
    : cache_(
          [](size_t bytes, void** data, bool* out_of_memory) {
            const cudaError_t err = cudaMalloc(data, bytes);
            *out_of_memory = err == cudaErrorMemoryAllocation;
            if (err != cudaSuccess) (void)cudaGetLastError();  // not the next call's error
            return CudaStatus(err, sdk::Format("Memory_Allocate: cudaMalloc(%zu bytes)", bytes));
          },
          [](void* data) { (void)cudaFree(data); }) {}

sdk::Status DeviceAllocator::Obtain(size_t size_bytes, void** data, size_t* reserved_bytes) {
  return cache_.Obtain(size_bytes, data, reserved_bytes);
}

void DeviceAllocator::Release(void* data, size_t reserved_bytes) {
  cache_.Release(data, reserved_bytes);
}

}  // namespace mnt::cuda

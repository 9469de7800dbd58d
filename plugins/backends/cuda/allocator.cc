#include "plugins/backends/cuda/allocator.h"

#include <cuda_runtime.h>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

namespace {
constexpr size_t kSmallStep = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kLargeStep = size_t{2} << 20;
}  // namespace

size_t DeviceAllocator::SizeClass(size_t size_bytes) {
  const size_t step = size_bytes <= kSmallLimit ? kSmallStep : kLargeStep;
  return (size_bytes + step - 1) / step * step;
}

sdk::Status DeviceAllocator::Obtain(size_t size_bytes, void** data,
                                    size_t* reserved_bytes) {
  const size_t class_bytes = SizeClass(size_bytes);
  if (class_bytes < size_bytes) {
    return sdk::ResourceExhausted(
        sdk::Format("Memory_Allocate: %zu bytes is too large", size_bytes));
  }
  auto it = free_blocks_.find(class_bytes);
  if (it != free_blocks_.end()) {
    *data = it->second;
    free_blocks_.erase(it);
    cached_bytes_ -= static_cast<int64_t>(class_bytes);
  } else {
    cudaError_t err = cudaMalloc(data, class_bytes);
    if (err == cudaErrorMemoryAllocation && !free_blocks_.empty()) {
      (void)cudaGetLastError();  // clear the sticky-free error state
      ReleaseCached();
      err = cudaMalloc(data, class_bytes);
    }
    MNT_CUDA_RETURN_IF_ERROR(
        err, sdk::Format("Memory_Allocate: cudaMalloc(%zu bytes)", class_bytes));
  }
  *reserved_bytes = class_bytes;
  return sdk::Status::Ok();
}

void DeviceAllocator::Release(void* data, size_t reserved_bytes) {
  free_blocks_.emplace(reserved_bytes, data);
  cached_bytes_ += static_cast<int64_t>(reserved_bytes);
}

void DeviceAllocator::ReleaseCached() {
  for (auto& [size, p] : free_blocks_) cudaFree(p);
  free_blocks_.clear();
  cached_bytes_ = 0;
}

}  // namespace mnt::cuda

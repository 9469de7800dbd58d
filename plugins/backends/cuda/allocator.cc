#include "plugins/backends/cuda/allocator.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

namespace {
bool IsCategory(int c) { return c >= 0 && c < MNT_MEMORY_CATEGORY_COUNT; }
constexpr size_t kSmallStep = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kLargeStep = size_t{2} << 20;
}  // namespace

size_t DeviceAllocator::SizeClass(size_t size_bytes) {
  const size_t step = size_bytes <= kSmallLimit ? kSmallStep : kLargeStep;
  return (size_bytes + step - 1) / step * step;
}

sdk::Status DeviceAllocator::Allocate(size_t size_bytes,
                                      MNT_MemoryCategory category, void** data) {
  if (!IsCategory(category)) {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_Allocate: unknown memory category %d", static_cast<int>(category)));
  }
  *data = nullptr;
  if (size_bytes == 0) return sdk::Status::Ok();
  const size_t class_bytes = SizeClass(size_bytes);
  if (class_bytes < size_bytes) {
    return sdk::ResourceExhausted(
        sdk::Format("Memory_Allocate: %zu bytes is too large", size_bytes));
  }
  void* p = nullptr;
  auto it = free_blocks_.find(class_bytes);
  if (it != free_blocks_.end()) {
    p = it->second;
    free_blocks_.erase(it);
    cached_bytes_ -= static_cast<int64_t>(class_bytes);
  } else {
    cudaError_t err = cudaMalloc(&p, class_bytes);
    if (err == cudaErrorMemoryAllocation && !free_blocks_.empty()) {
      (void)cudaGetLastError();  // clear the sticky-free error state
      ReleaseCached();
      err = cudaMalloc(&p, class_bytes);
    }
    MNT_CUDA_RETURN_IF_ERROR(
        err, sdk::Format("Memory_Allocate: cudaMalloc(%zu bytes)", class_bytes));
  }
  live_[reinterpret_cast<uintptr_t>(p)] = Block{size_bytes, class_bytes, category};
  Add(category, static_cast<int64_t>(size_bytes));
  *data = p;
  return sdk::Status::Ok();
}

sdk::Status DeviceAllocator::Free(void* data) {
  if (data == nullptr) return sdk::Status::Ok();
  auto it = live_.find(reinterpret_cast<uintptr_t>(data));
  if (it == live_.end()) {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_Free: %p was not allocated by this backend (or already freed)",
        data));
  }
  Add(it->second.category, -static_cast<int64_t>(it->second.size_bytes));
  free_blocks_.emplace(it->second.class_bytes, data);
  cached_bytes_ += static_cast<int64_t>(it->second.class_bytes);
  live_.erase(it);
  return sdk::Status::Ok();
}

void DeviceAllocator::ReleaseCached() {
  for (auto& [size, p] : free_blocks_) cudaFree(p);
  free_blocks_.clear();
  cached_bytes_ = 0;
}

void DeviceAllocator::ReleaseAll() {
  ReleaseCached();
  for (auto& [address, block] : live_) {
    Add(block.category, -static_cast<int64_t>(block.size_bytes));
    cudaFree(reinterpret_cast<void*>(address));
  }
  live_.clear();
}

bool DeviceAllocator::Contains(const void* data, size_t size_bytes) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  auto it = live_.upper_bound(p);
  if (it == live_.begin()) return false;
  --it;
  const uintptr_t start = it->first;
  const uintptr_t end = start + it->second.size_bytes;
  return p >= start && p <= end && size_bytes <= end - p;
}

sdk::Status DeviceAllocator::GetStats(MNT_MemoryCategory category,
                                      int64_t* current_bytes,
                                      int64_t* peak_bytes) const {
  int index;
  if (category == MNT_MEMORY_ALL) {
    index = kAllIndex;
  } else if (IsCategory(category)) {
    index = category;
  } else {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_GetStats: unknown memory category %d", static_cast<int>(category)));
  }
  *current_bytes = current_[index];
  *peak_bytes = peak_[index];
  return sdk::Status::Ok();
}

void DeviceAllocator::ResetPeak() {
  for (int i = 0; i <= kAllIndex; ++i) peak_[i] = current_[i];
}

void DeviceAllocator::Add(int index, int64_t delta) {
  for (int i : {index, static_cast<int>(kAllIndex)}) {
    current_[i] += delta;
    peak_[i] = std::max(peak_[i], current_[i]);
  }
}

}  // namespace mnt::cuda

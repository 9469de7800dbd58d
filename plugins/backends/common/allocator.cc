#include "plugins/backends/common/allocator.h"

#include <algorithm>

namespace mnt::backend {

namespace {
bool IsCategory(int c) { return c >= 0 && c < MNT_MEMORY_CATEGORY_COUNT; }
}  // namespace

sdk::Status Allocator::Allocate(size_t size_bytes, int32_t raw_category, void** data) {
  if (!IsCategory(raw_category)) {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_Allocate: unknown memory category %d", raw_category));
  }
  const auto category = static_cast<MNT_MemoryCategory>(raw_category);
  *data = nullptr;
  if (size_bytes == 0) return sdk::Status::Ok();
  void* p = nullptr;
  size_t reserved = 0;
  MNT_RETURN_IF_ERROR(Obtain(size_bytes, &p, &reserved));
  live_[reinterpret_cast<uintptr_t>(p)] = Block{size_bytes, reserved, category};
  Count(category, static_cast<int64_t>(size_bytes));
  *data = p;
  return sdk::Status::Ok();
}

sdk::Status Allocator::Free(void* data) {
  if (data == nullptr) return sdk::Status::Ok();
  auto it = live_.find(reinterpret_cast<uintptr_t>(data));
  if (it == live_.end()) {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_Free: %p was not allocated by this backend (or already freed)",
        data));
  }
  const Block block = it->second;
  live_.erase(it);
  Count(block.category, -static_cast<int64_t>(block.size_bytes));
  Release(data, block.reserved_bytes);
  return sdk::Status::Ok();
}

void Allocator::ReleaseAll() {
  for (auto& [address, block] : live_) {
    Count(block.category, -static_cast<int64_t>(block.size_bytes));
    Release(reinterpret_cast<void*>(address), block.reserved_bytes);
  }
  live_.clear();
}

bool Allocator::Contains(const void* data, size_t size_bytes) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  auto it = live_.upper_bound(p);  // first block starting after p
  if (it == live_.begin()) return false;
  --it;
  const uintptr_t start = it->first;
  const uintptr_t end = start + it->second.size_bytes;
  return p >= start && p <= end && size_bytes <= end - p;
}

sdk::Status Allocator::GetStats(int32_t category, int64_t* current_bytes,
                                int64_t* peak_bytes) const {
  int index;
  if (category == MNT_MEMORY_ALL) {
    index = kAllIndex;
  } else if (IsCategory(category)) {
    index = category;
  } else {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_GetStats: unknown memory category %d", category));
  }
  *current_bytes = current_[index];
  *peak_bytes = peak_[index];
  return sdk::Status::Ok();
}

void Allocator::ResetPeak() {
  for (int i = 0; i <= kAllIndex; ++i) peak_[i] = current_[i];
}

void Allocator::Count(int index, int64_t delta) {
  for (int i : {index, static_cast<int>(kAllIndex)}) {
    current_[i] += delta;
    peak_[i] = std::max(peak_[i], current_[i]);
  }
}

}  // namespace mnt::backend

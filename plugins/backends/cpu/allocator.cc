#include "plugins/backends/cpu/allocator.h"

#include <cstdlib>

namespace mnt::cpu {

sdk::Status HostAllocator::Obtain(size_t size_bytes, void** data,
                                  size_t* reserved_bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t padded = (size_bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (padded < size_bytes) {
    return sdk::ResourceExhausted(
        sdk::Format("Memory_Allocate: %zu bytes is too large", size_bytes));
  }
  *data = std::aligned_alloc(kAlignment, padded);
  if (*data == nullptr) {
    return sdk::ResourceExhausted(sdk::Format(
        "Memory_Allocate: out of host memory allocating %zu bytes", size_bytes));
  }
  *reserved_bytes = padded;
  return sdk::Status::Ok();
}

void HostAllocator::Release(void* data, size_t) { std::free(data); }

}  // namespace mnt::cpu

// Host memory handed out as "device" memory: 256-byte aligned blocks from
// aligned_alloc, with the common per-block and per-category bookkeeping.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_ALLOCATOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_ALLOCATOR_H_

#include <cstddef>

#include "plugins/backends/common/allocator.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

class HostAllocator : public backend::Allocator {
 public:
  static constexpr size_t kAlignment = 256;
  ~HostAllocator() override { ReleaseAll(); }

 protected:
  sdk::Status Obtain(size_t size_bytes, void** data, size_t* reserved_bytes) override;
  void Release(void* data, size_t reserved_bytes) override;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_ALLOCATOR_H_

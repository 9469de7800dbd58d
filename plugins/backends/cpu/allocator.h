// Host memory handed out as "device" memory: 256-byte aligned, tracked per
// allocation so that stats, foreign-pointer checks and bulk release work.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_ALLOCATOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

class Allocator {
 public:
  static constexpr size_t kAlignment = 256;

  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator() { FreeAll(); }

  // size_bytes 0 gives nullptr. Stats count the requested bytes.
  sdk::Status Allocate(size_t size_bytes, MNT_MemoryCategory category,
                       void** data);
  // nullptr is a no-op; a pointer this allocator did not return is an error.
  sdk::Status Free(void* data);
  void FreeAll();

  // True when [data, data + size_bytes) lies inside one live allocation.
  bool Contains(const void* data, size_t size_bytes) const;

  // `category` may be MNT_MEMORY_ALL.
  sdk::Status GetStats(MNT_MemoryCategory category, int64_t* current_bytes,
                       int64_t* peak_bytes) const;
  void ResetPeak();

 private:
  struct Block {
    size_t size_bytes;
    MNT_MemoryCategory category;
  };
  static constexpr int kAllIndex = MNT_MEMORY_CATEGORY_COUNT;

  void Add(int index, int64_t delta);

  std::map<uintptr_t, Block> blocks_;  // keyed by start address
  int64_t current_[kAllIndex + 1] = {};
  int64_t peak_[kAllIndex + 1] = {};
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_ALLOCATOR_H_

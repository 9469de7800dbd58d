// The bookkeeping every backend's allocator shares: which blocks are live
// (so foreign pointers, double frees and views running past an allocation are
// caught), and current/peak bytes per MNT_MemoryCategory and in total. A
// backend derives and supplies only how memory is obtained and given back
// (aligned_alloc on the CPU, a caching cudaMalloc pool on CUDA). Stats count
// the requested bytes, whatever the backend reserves underneath.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_ALLOCATOR_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

class Allocator {
 public:
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  // A derived allocator calls ReleaseAll() in its own destructor, while its
  // Release() can still run.
  virtual ~Allocator() = default;

  // size_bytes 0 gives nullptr; an unknown category is an error. The
  // category is the caller's raw int32 (an MNT_MemoryCategory once checked).
  sdk::Status Allocate(size_t size_bytes, int32_t category, void** data);
  // nullptr is a no-op; a pointer this allocator did not hand out (or
  // already got back) is an error.
  sdk::Status Free(void* data);
  // Gives back every live block (Backend_Destroy).
  void ReleaseAll();

  // True when [data, data + size_bytes) lies inside one live allocation.
  bool Contains(const void* data, size_t size_bytes) const;
  // `category` (raw, as Allocate's) may be MNT_MEMORY_ALL.
  sdk::Status GetStats(int32_t category, int64_t* current_bytes,
                       int64_t* peak_bytes) const;
  // Every category's peak becomes its current value.
  void ResetPeak();

 protected:
  // At least `size_bytes` (> 0), 256-byte aligned; *reserved_bytes says how
  // much was actually set aside (handed back to Release).
  virtual sdk::Status Obtain(size_t size_bytes, void** data,
                             size_t* reserved_bytes) = 0;
  virtual void Release(void* data, size_t reserved_bytes) = 0;

 private:
  struct Block {
    size_t size_bytes;      // requested
    size_t reserved_bytes;  // obtained
    MNT_MemoryCategory category;
  };
  static constexpr int kAllIndex = MNT_MEMORY_CATEGORY_COUNT;
  void Count(int index, int64_t delta);

  std::map<uintptr_t, Block> live_;  // keyed by start address
  int64_t current_[kAllIndex + 1] = {};
  int64_t peak_[kAllIndex + 1] = {};
};

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_ALLOCATOR_H_

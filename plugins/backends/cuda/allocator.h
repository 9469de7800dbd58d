// Caching device allocator: cudaMalloc'd blocks are kept on free lists by
// size class and handed out again, so a training step allocates no device
// memory after the first. Reuse is safe without events because one backend
// instance has one stream: work that used a freed block was enqueued before
// any work on its next owner. Stats count the requested bytes per category,
// exactly as the CPU backend does.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

class DeviceAllocator {
 public:
  DeviceAllocator() = default;
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;
  ~DeviceAllocator() { ReleaseAll(); }

  // The size class a request is rounded up to: 512-byte steps up to 1 MiB,
  // 2 MiB steps above (bounds the waste to < 2x for small, < 2 MiB for large).
  static size_t SizeClass(size_t size_bytes);

  // size_bytes 0 gives nullptr. cudaMalloc alignment (>= 256 bytes).
  sdk::Status Allocate(size_t size_bytes, MNT_MemoryCategory category,
                       void** data);
  // nullptr is a no-op; a pointer this allocator did not hand out (or already
  // got back) is an error. The block goes to the free list.
  sdk::Status Free(void* data);
  // cudaFree of every block, live and cached (Backend_Destroy).
  void ReleaseAll();
  // cudaFree of the cached blocks only (retry after an out-of-memory).
  void ReleaseCached();

  bool Contains(const void* data, size_t size_bytes) const;
  sdk::Status GetStats(MNT_MemoryCategory category, int64_t* current_bytes,
                       int64_t* peak_bytes) const;
  void ResetPeak();
  int64_t cached_bytes() const { return cached_bytes_; }

 private:
  struct Block {
    size_t size_bytes;   // requested
    size_t class_bytes;  // allocated
    MNT_MemoryCategory category;
  };
  static constexpr int kAllIndex = MNT_MEMORY_CATEGORY_COUNT;
  void Add(int index, int64_t delta);

  std::map<uintptr_t, Block> live_;           // keyed by start address
  std::multimap<size_t, void*> free_blocks_;  // size class -> block
  int64_t cached_bytes_ = 0;
  int64_t current_[kAllIndex + 1] = {};
  int64_t peak_[kAllIndex + 1] = {};
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_

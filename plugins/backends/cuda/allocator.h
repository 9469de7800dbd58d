// Caching device allocator: cudaMalloc'd blocks are kept on free lists by
// size class and handed out again, so a training step allocates no device
// memory after the first (the caching rules, and those that keep CUDA-graph
// capture free of allocation, are block_cache.h's). Reuse is safe without
// events because one backend instance has one stream: work that used a
// freed block was enqueued before any work on its next owner. Live blocks
// and statistics are the common allocator's (requested bytes per category,
// as on every backend).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plugins/backends/common/allocator.h"
#include "plugins/backends/cuda/block_cache.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

class DeviceAllocator : public backend::Allocator {
 public:
  DeviceAllocator();
  ~DeviceAllocator() override { ReleaseEverything(); }

  static size_t SizeClass(size_t size_bytes) { return BlockCache::SizeClass(size_bytes); }

  // cudaFree of the cached blocks only.
  void ReleaseCached() { cache_.ReleaseCached(); }
  // cudaFree of every block, live and cached (Backend_Destroy).
  void ReleaseEverything() {
    ReleaseAll();
    cache_.set_capturing(false);
    cache_.ReleaseCached();
  }
  int64_t cached_bytes() const { return cache_.cached_bytes(); }

  // Graph capture (block_cache.h): fill the cache for `requests` before it,
  // and serve from the cache only during it.
  sdk::Status Reserve(const std::vector<size_t>& requests, size_t* added_bytes) {
    return cache_.Reserve(requests, added_bytes);
  }
  void set_capturing(bool on) { cache_.set_capturing(on); }

 protected:
  sdk::Status Obtain(size_t size_bytes, void** data, size_t* reserved_bytes) override;
  // The block goes to the free list of its size class.
  void Release(void* data, size_t reserved_bytes) override;

 private:
  BlockCache cache_;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_

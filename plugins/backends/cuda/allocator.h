// Caching device allocator: cudaMalloc'd blocks are kept on free lists by
// size class and handed out again, so a training step allocates no device
// memory after the first. Reuse is safe without events because one backend
// instance has one stream: work that used a freed block was enqueued before
// any work on its next owner. Live blocks and statistics are the common
// allocator's (requested bytes per category, as on every backend).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "plugins/backends/common/allocator.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

class DeviceAllocator : public backend::Allocator {
 public:
  ~DeviceAllocator() override { ReleaseEverything(); }

  // The size class a request is rounded up to: 512-byte steps up to 1 MiB,
  // 2 MiB steps above (bounds the waste to < 2x for small, < 2 MiB for large).
  static size_t SizeClass(size_t size_bytes);

  // cudaFree of the cached blocks only (retry after an out-of-memory).
  void ReleaseCached();
  // cudaFree of every block, live and cached (Backend_Destroy).
  void ReleaseEverything() {
    ReleaseAll();
    ReleaseCached();
  }
  int64_t cached_bytes() const { return cached_bytes_; }

 protected:
  sdk::Status Obtain(size_t size_bytes, void** data, size_t* reserved_bytes) override;
  // The block goes to the free list of its size class.
  void Release(void* data, size_t reserved_bytes) override;

 private:
  std::multimap<size_t, void*> free_blocks_;  // size class -> block
  int64_t cached_bytes_ = 0;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ALLOCATOR_H_

// The caching rules of the cuda backend's device allocator, apart from
// cudaMalloc/cudaFree (the allocator binds them; the CPU tests bind malloc),
// so the rules that keep CUDA-graph capture free of allocation are tested on
// any machine:
//   - blocks are handed out by size class and kept on free lists when given
//     back, so a training step allocates nothing after the first;
//   - out of memory outside capture, the free lists are given back to the
//     device and the request is tried once more;
//   - while a step is captured (set_capturing), a request is served from the
//     free lists only: nothing is allocated or freed inside a capture (a
//     cudaFree there would synchronise the device, a cudaMalloc would put a
//     device-wide call into the captured region). A miss is an error, which
//     makes the capture fail cleanly (nothing ran) and is counted;
//   - Reserve() fills the free lists beforehand, outside capture, with what
//     the step before (issued eagerly, equal to the one captured) asked for:
//     a captured step's scratch blocks belong to its graph and are not
//     reused within it, so it needs one block per request.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_BLOCK_CACHE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "plugins/sdk/status.h"

namespace mnt::cuda {

class BlockCache {
 public:
  // fresh(bytes, &ptr) allocates from the device; out_of_memory is true when
  // it failed for want of memory (worth a retry after ReleaseCached), and it
  // returns the error either way. give_back(ptr) frees a block.
  using Fresh = std::function<sdk::Status(size_t bytes, void** data, bool* out_of_memory)>;
  using GiveBack = std::function<void(void* data)>;

  BlockCache(Fresh fresh, GiveBack give_back)
      : fresh_(std::move(fresh)), give_back_(std::move(give_back)) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() { ReleaseCached(); }

  // The size class a request is rounded up to: 512-byte steps up to 1 MiB,
  // 2 MiB steps above (bounds the waste to < 2x for small, < 2 MiB for large).
  static size_t SizeClass(size_t size_bytes) {
    const size_t step = size_bytes <= kSmallLimit ? kSmallStep : kLargeStep;
    return (size_bytes + step - 1) / step * step;
  }

  // A block of SizeClass(size_bytes) bytes (*reserved_bytes).
  sdk::Status Obtain(size_t size_bytes, void** data, size_t* reserved_bytes) {
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
    } else if (capturing_) {
      ++capture_misses_;
      return sdk::ResourceExhausted(sdk::Format(
          "no cached block of %zu bytes for a request made while a CUDA graph is captured "
          "(nothing is allocated inside a capture; the step before did not ask for it)",
          class_bytes));
    } else {
      bool out_of_memory = false;
      sdk::Status s = fresh_(class_bytes, data, &out_of_memory);
      if (!s.ok() && out_of_memory && !free_blocks_.empty()) {
        ReleaseCached();
        s = fresh_(class_bytes, data, &out_of_memory);
      }
      MNT_RETURN_IF_ERROR(s);
    }
    *reserved_bytes = class_bytes;
    return sdk::Status::Ok();
  }

  // The block goes to the free list of its class (also while capturing).
  void Release(void* data, size_t reserved_bytes) {
    free_blocks_.emplace(reserved_bytes, data);
    cached_bytes_ += static_cast<int64_t>(reserved_bytes);
  }

  // Gives every cached block back to the device (never while capturing).
  void ReleaseCached() {
    if (capturing_) return;
    for (auto& [size, p] : free_blocks_) give_back_(p);
    free_blocks_.clear();
    cached_bytes_ = 0;
  }

  // Makes the free lists hold at least one block per request in `requests`
  // (bytes as asked; classes counted), allocating the shortfall now.
  // *added_bytes: what was allocated. Not while capturing.
  sdk::Status Reserve(const std::vector<size_t>& requests, size_t* added_bytes) {
    *added_bytes = 0;
    if (capturing_) return sdk::FailedPrecondition("BlockCache::Reserve while capturing");
    std::map<size_t, int64_t> need;
    for (size_t r : requests) ++need[SizeClass(r)];
    for (const auto& [class_bytes, count] : need) {
      for (int64_t have = static_cast<int64_t>(free_blocks_.count(class_bytes)); have < count;
           ++have) {
        void* p = nullptr;
        bool out_of_memory = false;
        MNT_RETURN_IF_ERROR(fresh_(class_bytes, &p, &out_of_memory));
        Release(p, class_bytes);
        *added_bytes += class_bytes;
      }
    }
    return sdk::Status::Ok();
  }

  // Bytes `requests` would hold at once (one block each).
  static size_t ClassBytes(const std::vector<size_t>& requests) {
    size_t total = 0;
    for (size_t r : requests) total += SizeClass(r);
    return total;
  }

  void set_capturing(bool on) { capturing_ = on; }
  bool capturing() const { return capturing_; }
  int64_t cached_bytes() const { return cached_bytes_; }
  int64_t capture_misses() const { return capture_misses_; }

 private:
  static constexpr size_t kSmallStep = 512;
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kLargeStep = size_t{2} << 20;

  Fresh fresh_;
  GiveBack give_back_;
  std::multimap<size_t, void*> free_blocks_;  // size class -> block
  int64_t cached_bytes_ = 0;
  bool capturing_ = false;
  int64_t capture_misses_ = 0;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_BLOCK_CACHE_H_

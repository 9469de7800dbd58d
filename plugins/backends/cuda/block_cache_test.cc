// The device allocator's caching rules on host memory (malloc standing in
// for cudaMalloc): reuse by size class, the out-of-memory retry, and graph
// capture that neither allocates nor frees.
#include "plugins/backends/cuda/block_cache.h"

#include <cstdlib>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

class BlockCacheTest : public ::testing::Test {
 protected:
  // Before cache_: its destructor gives its blocks back through them.
  int fresh_calls_ = 0;
  int given_back_ = 0;
  int fail_next_ = 0;
  std::set<void*> live_;
  BlockCache cache_{
      [this](size_t bytes, void** data, bool* out_of_memory) {
        ++fresh_calls_;
        if (fail_next_ > 0) {
          --fail_next_;
          *out_of_memory = true;
          return sdk::ResourceExhausted("fake cudaMalloc: out of memory");
        }
        *out_of_memory = false;
        *data = std::malloc(bytes);
        live_.insert(*data);
        return sdk::Status::Ok();
      },
      [this](void* data) {
        ++given_back_;
        live_.erase(data);
        std::free(data);
      }};
  void* Get(size_t bytes, sdk::Status* status = nullptr) {
    void* p = nullptr;
    size_t reserved = 0;
    const sdk::Status s = cache_.Obtain(bytes, &p, &reserved);
    if (status != nullptr) *status = s;
    if (s.ok()) {
      EXPECT_EQ(reserved, BlockCache::SizeClass(bytes));
    }
    return s.ok() ? p : nullptr;
  }
  void Put(void* p, size_t bytes) { cache_.Release(p, BlockCache::SizeClass(bytes)); }
};

TEST_F(BlockCacheTest, SizeClasses) {
  EXPECT_EQ(BlockCache::SizeClass(1), 512u);
  EXPECT_EQ(BlockCache::SizeClass(512), 512u);
  EXPECT_EQ(BlockCache::SizeClass(513), 1024u);
  EXPECT_EQ(BlockCache::SizeClass(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(BlockCache::SizeClass((size_t{1} << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(BlockCache::SizeClass((size_t{2} << 20) + 1), size_t{4} << 20);
}

TEST_F(BlockCacheTest, GivenBackBlocksAreHandedOutAgain) {
  void* a = Get(1000);
  Put(a, 1000);
  EXPECT_EQ(cache_.cached_bytes(), 1024);
  void* b = Get(600);  // same class
  EXPECT_EQ(a, b);
  EXPECT_EQ(fresh_calls_, 1);
  EXPECT_EQ(cache_.cached_bytes(), 0);
  Put(b, 600);
}

TEST_F(BlockCacheTest, OutOfMemoryGivesTheCacheBackAndRetriesOnce) {
  void* a = Get(4096);
  Put(a, 4096);
  fail_next_ = 1;
  void* b = Get(8192);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(given_back_, 1);  // the cached 4096-byte block
  EXPECT_EQ(fresh_calls_, 3);
  EXPECT_EQ(cache_.cached_bytes(), 0);
  // Out of memory twice: the error comes through.
  fail_next_ = 2;
  sdk::Status s;
  EXPECT_EQ(Get(8192 * 4, &s), nullptr);
  EXPECT_FALSE(s.ok());
  Put(b, 8192);
}

TEST_F(BlockCacheTest, CaptureNeitherAllocatesNorFrees) {
  void* a = Get(3000);
  Put(a, 3000);
  cache_.set_capturing(true);
  const int fresh_before = fresh_calls_;
  void* b = Get(3000);  // cached: served
  EXPECT_EQ(a, b);
  sdk::Status s;
  EXPECT_EQ(Get(3000, &s), nullptr);  // none cached: refused, not allocated
  EXPECT_EQ(s.code(), MNT_ERROR_RESOURCE_EXHAUSTED);
  EXPECT_NE(s.message().find("captured"), std::string::npos) << s.message();
  EXPECT_EQ(cache_.capture_misses(), 1);
  EXPECT_EQ(fresh_calls_, fresh_before);
  Put(b, 3000);
  cache_.ReleaseCached();  // no cudaFree inside a capture
  EXPECT_EQ(given_back_, 0);
  size_t added = 0;
  EXPECT_FALSE(cache_.Reserve({100}, &added).ok());  // not while capturing
  cache_.set_capturing(false);
  cache_.ReleaseCached();
  EXPECT_EQ(given_back_, 1);
  EXPECT_TRUE(live_.empty());
}

TEST_F(BlockCacheTest, ReserveHoldsOneBlockPerRequestOfTheStepBefore) {
  // The eager step asked for two 100-byte scratch blocks (reusing one block)
  // and one of 3 MiB; a captured step keeps every block, so it needs three.
  const std::vector<size_t> step = {100, 3u << 20, 100};
  void* x = Get(100);
  Put(x, 100);  // one 512-byte block already cached
  size_t added = 0;
  ASSERT_TRUE(cache_.Reserve(step, &added).ok());
  EXPECT_EQ(added, 512u + (size_t{4} << 20));
  EXPECT_EQ(BlockCache::ClassBytes(step), 2 * 512u + (size_t{4} << 20));
  ASSERT_TRUE(cache_.Reserve(step, &added).ok());
  EXPECT_EQ(added, 0u);  // already there

  cache_.set_capturing(true);
  const int fresh_before = fresh_calls_;
  std::vector<void*> got;
  for (size_t r : step) {
    got.push_back(Get(r));
    ASSERT_NE(got.back(), nullptr) << r;
  }
  EXPECT_EQ(std::set<void*>(got.begin(), got.end()).size(), 3u);  // distinct blocks
  EXPECT_EQ(Get(100), nullptr);  // a fourth request was not in the step
  EXPECT_EQ(fresh_calls_, fresh_before);
  for (size_t i = 0; i < step.size(); ++i) Put(got[i], step[i]);
  cache_.set_capturing(false);
}

}  // namespace
}  // namespace mnt::cuda

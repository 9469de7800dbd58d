// BucketReadiness: buckets complete exactly when their last parameter
// element is handed over, whatever order the slices come in (random slices
// of random layouts, printed seed); bad slices and double reports refused.
#include "trainer/parallel/bucket_readiness.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {
namespace {

TEST(BucketReadinessTest, CompletesEachBucketWithItsLastElement) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<int64_t> numels(1 + rng() % 12);
    for (int64_t& n : numels) n = 1 + rng() % 3000;
    const std::vector<int64_t> offsets = FlatOffsets(numels, 128);
    const int world = 1 + rng() % 3;
    const ShardLayout layout(offsets, numels, world, 1 + rng() % 4000, 128);
    BucketReadiness ready(layout);
    // Every parameter cut into random slices, handed over in random order.
    std::vector<std::tuple<int64_t, int64_t, int64_t>> slices;
    for (size_t p = 0; p < numels.size(); ++p) {
      for (int64_t at = 0; at < numels[p];) {
        const int64_t n = std::min<int64_t>(numels[p] - at, 1 + rng() % 700);
        slices.emplace_back(p, at, n);
        at += n;
      }
    }
    std::shuffle(slices.begin(), slices.end(), rng);
    std::vector<bool> element_done(layout.total(), true);  // padding: done
    for (size_t p = 0; p < numels.size(); ++p) {
      for (int64_t i = 0; i < numels[p]; ++i) element_done[offsets[p] + i] = false;
    }
    std::vector<int64_t> completed_all;
    for (const auto& [p, first, n] : slices) {
      std::vector<int64_t> completed;
      ASSERT_TRUE(ready.Mark(p, first, n, &completed).ok());
      for (int64_t i = 0; i < n; ++i) element_done[offsets[p] + first + i] = true;
      // Exactly the buckets whose elements are now all done, and not before.
      for (size_t b = 0; b < layout.buckets().size(); ++b) {
        const auto [begin, end] = layout.buckets()[b];
        const bool done = std::all_of(element_done.begin() + begin, element_done.begin() + end,
                                      [](bool d) { return d; });
        const bool handed =
            std::find(completed_all.begin(), completed_all.end(), int64_t(b)) !=
                completed_all.end() ||
            std::find(completed.begin(), completed.end(), int64_t(b)) != completed.end();
        const bool padding_only = std::none_of(slices.begin(), slices.end(), [&](const auto& s) {
          const int64_t a = offsets[std::get<0>(s)] + std::get<1>(s);
          return a < end && a + std::get<2>(s) > begin;
        });
        if (!padding_only) {
          EXPECT_EQ(handed, done) << "bucket " << b;
        }
      }
      completed_all.insert(completed_all.end(), completed.begin(), completed.end());
    }
    EXPECT_EQ(ready.finished_elements(), ready.total_elements());
    // What is left are the padding-only buckets.
    for (int64_t b : ready.Unfinished()) {
      const auto [begin, end] = layout.buckets()[b];
      for (size_t p = 0; p < numels.size(); ++p) {
        EXPECT_FALSE(offsets[p] < end && offsets[p] + numels[p] > begin) << "bucket " << b;
      }
    }
  }
}

TEST(BucketReadinessTest, RefusesBadSlicesAndDoubleReports) {
  const std::vector<int64_t> numels{300, 100};
  const std::vector<int64_t> offsets = FlatOffsets(numels, 128);
  const ShardLayout layout(offsets, numels, 2, 0, 128);
  BucketReadiness ready(layout);
  std::vector<int64_t> completed;
  EXPECT_FALSE(ready.Mark(2, 0, 1, &completed).ok());
  EXPECT_FALSE(ready.Mark(0, 250, 51, &completed).ok());
  EXPECT_FALSE(ready.Mark(1, 0, 0, &completed).ok());
  ASSERT_TRUE(ready.Mark(1, 0, 100, &completed).ok());
  EXPECT_FALSE(ready.Mark(1, 50, 10, &completed).ok());
  ASSERT_TRUE(ready.Mark(0, 0, 300, &completed).ok());
  EXPECT_EQ(completed, std::vector<int64_t>{0});
  ready.Reset();
  completed.clear();
  EXPECT_TRUE(ready.Mark(1, 0, 100, &completed).ok());
  EXPECT_TRUE(completed.empty());
}

}  // namespace
}  // namespace mnt::trainer

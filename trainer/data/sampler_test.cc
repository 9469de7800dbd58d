#include "trainer/data/sampler.h"

#include <algorithm>
#include <iostream>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace trainer {
namespace {

uint64_t TestSeed() {
  const uint64_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  return seed;
}

TEST(SplitMix64Test, MatchesReferenceSequence) {
  // First outputs of the published splitmix64.c from state 0: pins the
  // sequence on every compiler and standard library.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64(&state), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(SplitMix64(&state), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(SplitMix64(&state), 0x06C45D188009454Full);
}

TEST(UniformBelowTest, StaysInRangeAndIsRoughlyUniform) {
  uint64_t state = TestSeed();
  constexpr int kBuckets = 10, kDraws = 200000;
  std::vector<int> counts(kBuckets, 0);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t v = UniformBelow(&state, kBuckets);
    ASSERT_LT(v, static_cast<uint64_t>(kBuckets));
    ++counts[v];
  }
  // Chi-square with 9 degrees of freedom: 27.9 is the 0.999 quantile.
  double chi2 = 0;
  const double expected = static_cast<double>(kDraws) / kBuckets;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 27.9);
  EXPECT_EQ(UniformBelow(&state, 1), 0u);
  const uint64_t huge = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 1000; ++i) ASSERT_LT(UniformBelow(&state, huge), huge);
}

TEST(ShuffledRangeTest, IsADeterministicPermutation) {
  const uint64_t seed = TestSeed();
  for (int64_t n : {0, 1, 2, 7, 100, 1001}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> order = ShuffledRange(n, seed);
    EXPECT_EQ(order, ShuffledRange(n, seed));
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  }
  EXPECT_NE(ShuffledRange(100, seed), ShuffledRange(100, seed + 1));
  std::vector<int64_t> identity(100);
  for (int i = 0; i < 100; ++i) identity[i] = i;
  EXPECT_NE(ShuffledRange(100, seed), identity);
}

TEST(BatchSamplerTest, EveryEpochVisitsEveryIndexOnce) {
  const uint64_t seed = TestSeed();
  constexpr int64_t kN = 37;
  BatchSampler sampler(kN, seed);
  std::vector<int64_t> stream;
  for (int i = 0; i < 20; ++i) {  // 20 * 8 = 160 = 4 epochs + 12
    std::vector<int64_t> batch = sampler.NextBatch(8);
    ASSERT_EQ(batch.size(), 8u);
    stream.insert(stream.end(), batch.begin(), batch.end());
  }
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 4; ++e) {
    std::vector<int64_t> epoch(stream.begin() + e * kN, stream.begin() + (e + 1) * kN);
    epochs.push_back(epoch);
    std::sort(epoch.begin(), epoch.end());
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(epoch[i], i) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]);  // reshuffled each epoch
  EXPECT_EQ(sampler.state().epoch, 4);
  EXPECT_EQ(sampler.state().cursor, 12);
}

TEST(BatchSamplerTest, BatchLargerThanDatasetSpansEpochs) {
  BatchSampler sampler(3, TestSeed());
  std::vector<int64_t> batch = sampler.NextBatch(7);
  ASSERT_EQ(batch.size(), 7u);
  std::multiset<int64_t> first_six(batch.begin(), batch.begin() + 6);
  EXPECT_EQ(first_six, (std::multiset<int64_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(sampler.state().epoch, 2);
  EXPECT_EQ(sampler.state().cursor, 1);
}

TEST(BatchSamplerTest, RestoredStateContinuesIdentically) {
  const uint64_t seed = TestSeed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 10; ++trial) {
    const int64_t n = 1 + rng() % 200;
    const int64_t batch = 1 + rng() % 50;
    BatchSampler original(n, seed + trial);
    for (int64_t i = rng() % 30; i > 0; --i) original.NextBatch(batch);
    const SamplerState saved = original.state();

    BatchSampler restored(n, /*seed=*/12345);  // seed comes from the state
    ASSERT_TRUE(restored.SetState(saved).ok());
    for (int i = 0; i < 25; ++i) {
      ASSERT_EQ(original.NextBatch(batch), restored.NextBatch(batch)) << "trial " << trial;
    }
  }
}

TEST(BatchSamplerTest, SameSeedSameStreamDifferentSeedDifferentStream) {
  const uint64_t seed = TestSeed();
  BatchSampler a(500, seed), b(500, seed), c(500, seed + 1);
  const std::vector<int64_t> from_a = a.NextBatch(64);
  EXPECT_EQ(from_a, b.NextBatch(64));
  EXPECT_NE(from_a, c.NextBatch(64));
}

TEST(BatchSamplerTest, SetStateRejectsStatesThatDoNotFit) {
  BatchSampler sampler(10, 1);
  EXPECT_FALSE(sampler.SetState({1, -1, 0}).ok());
  EXPECT_FALSE(sampler.SetState({1, 0, 11}).ok());
  EXPECT_FALSE(sampler.SetState({1, 0, -1}).ok());
  const absl::Status s = sampler.SetState({1, 2, 11});
  EXPECT_EQ(s.message(), "sampler state (epoch 2, cursor 11) does not fit a dataset of 10 examples");
  EXPECT_TRUE(sampler.SetState({1, 3, 10}).ok());  // end of an epoch is valid
  EXPECT_EQ(sampler.NextBatch(1).size(), 1u);
  EXPECT_EQ(sampler.state().epoch, 4);
}

TEST(NumTextWindowsTest, CountsCompleteWindows) {
  EXPECT_EQ(NumTextWindows(0, 4), 0);
  EXPECT_EQ(NumTextWindows(4, 4), 0);  // needs seq_len + 1 tokens
  EXPECT_EQ(NumTextWindows(5, 4), 1);
  EXPECT_EQ(NumTextWindows(8, 4), 1);
  EXPECT_EQ(NumTextWindows(9, 4), 2);
  EXPECT_EQ(NumTextWindows(100, 0), 0);
  // Brute force: window i fits iff i*seq_len + seq_len + 1 <= n.
  for (int64_t n = 0; n < 60; ++n) {
    for (int64_t s = 1; s < 10; ++s) {
      int64_t count = 0;
      while (count * s + s + 1 <= n) ++count;
      ASSERT_EQ(NumTextWindows(n, s), count) << n << " " << s;
    }
  }
}

}  // namespace
}  // namespace trainer
}  // namespace mnt

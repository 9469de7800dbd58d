// The CUDA embedding backward's bookkeeping (embedding_buckets.h) on the CPU:
// the kernel's algorithm replayed on the host (bucket keys, a stable sort as
// cub's radix sort is, one double sum per run) must give the CPU reference's
// exact bits, bad ids must stay out of every row, and the sort's bit count
// must cover every key with no bit to spare.
#include "plugins/backends/cuda/embedding_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

// The CPU backend's order: rows start from the old value (or 0), tokens
// are added in order in double; ids outside [0, vocab) are skipped.
std::vector<float> Reference(const std::vector<int32_t>& ids, const std::vector<float>& dout,
                             const std::vector<float>& old, int64_t vocab, int64_t c,
                             bool accumulate) {
  std::vector<double> acc(vocab * c, 0.0);
  if (accumulate) std::copy(old.begin(), old.end(), acc.begin());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) continue;
    for (int64_t j = 0; j < c; ++j) acc[ids[i] * c + j] += dout[i * c + j];
  }
  return std::vector<float>(acc.begin(), acc.end());
}

// What embedding.cu does, step by step, with the shared helpers.
std::vector<float> SortedRuns(const std::vector<int32_t>& ids, const std::vector<float>& dout,
                              const std::vector<float>& old, int64_t vocab, int64_t c,
                              bool accumulate) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int32_t> keys(n), tokens(n);
  for (int64_t i = 0; i < n; ++i) keys[i] = EmbeddingBucket(ids[i], vocab);
  const int bits = EmbeddingSortBits(vocab);
  for (int32_t k : keys) EXPECT_LT(k, int64_t{1} << bits);
  std::iota(tokens.begin(), tokens.end(), 0);
  std::stable_sort(tokens.begin(), tokens.end(),
                   [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
  std::vector<int32_t> sorted(n);
  for (int64_t p = 0; p < n; ++p) sorted[p] = keys[tokens[p]];
  std::vector<float> table = accumulate ? old : std::vector<float>(vocab * c, 0.0f);
  for (int64_t p = 0; p < n; ++p) {
    if (!RunStartsAt(sorted.data(), p) || sorted[p] == vocab) continue;
    const int64_t end = RunEnd(sorted.data(), p, n), row = sorted[p];
    for (int64_t j = 0; j < c; ++j) {
      double acc = accumulate ? old[row * c + j] : 0.0;
      for (int64_t q = p; q < end; ++q) acc += dout[tokens[q] * c + j];
      table[row * c + j] = static_cast<float>(acc);
    }
  }
  return table;
}

TEST(EmbeddingBucketsTest, SortBitsCoverEveryKeyAndNoMore) {
  for (int64_t vocab = 1; vocab <= 70000; vocab += (vocab < 300 ? 1 : 997)) {
    const int bits = EmbeddingSortBits(vocab);
    EXPECT_GT(int64_t{1} << bits, vocab) << vocab;  // key `vocab` itself fits
    if (bits > 1) {
      EXPECT_LE(int64_t{1} << (bits - 1), vocab) << vocab;
    }
  }
  EXPECT_EQ(EmbeddingSortBits(50304), 16);
}

TEST(EmbeddingBucketsTest, BadIdsGoPastTheTable) {
  EXPECT_EQ(EmbeddingBucket(0, 10), 0);
  EXPECT_EQ(EmbeddingBucket(9, 10), 9);
  EXPECT_EQ(EmbeddingBucket(10, 10), 10);
  EXPECT_EQ(EmbeddingBucket(-1, 10), 10);
  EXPECT_EQ(EmbeddingBucket(-2147483647 - 1, 10), 10);
}

TEST(EmbeddingBucketsTest, RunsAreFoundAtTheirEdges) {
  const std::vector<int32_t> keys = {0, 0, 3, 5, 5, 5, 9};
  const std::vector<bool> starts = {true, false, true, true, false, false, true};
  for (int64_t p = 0; p < 7; ++p) EXPECT_EQ(RunStartsAt(keys.data(), p), starts[p]) << p;
  EXPECT_EQ(RunEnd(keys.data(), 0, 7), 2);
  EXPECT_EQ(RunEnd(keys.data(), 3, 7), 6);
  EXPECT_EQ(RunEnd(keys.data(), 6, 7), 7);
}

// Summation order is visible in double: 2^60 - 2^60 + 1 is 1 in token
// order and 0 in any order that adds the 1 before the cancellation.
TEST(EmbeddingBucketsTest, EachRunIsSummedInTokenOrder) {
  const float big = std::ldexp(1.0f, 60);
  const std::vector<int32_t> ids = {2, 0, 2, 1, 2, 0};
  const std::vector<float> dout = {big, 5.0f, -big, 7.0f, 1.0f, 6.0f};
  const std::vector<float> old = {0.0f, 0.0f, 0.0f};
  const std::vector<float> got = SortedRuns(ids, dout, old, 3, 1, false);
  EXPECT_EQ(got, (std::vector<float>{11.0f, 7.0f, 1.0f}));
  EXPECT_EQ(got, Reference(ids, dout, old, 3, 1, false));
}

// Skewed ids (a few very frequent ones, as real text has), values of very
// different magnitudes so that any other summation order changes bits.
TEST(EmbeddingBucketsTest, SortedRunsGiveTheReferenceBits) {
  std::mt19937 rng(std::random_device{}());
  for (int64_t vocab : {1, 2, 7, 64, 1000}) {
    for (bool accumulate : {false, true}) {
      const int64_t n = 1 + rng() % 3000, c = 1 + rng() % 9;
      std::vector<int32_t> ids(n);
      std::uniform_int_distribution<int32_t> any_id(0, static_cast<int32_t>(vocab) - 1);
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t r = rng() % 100;
        ids[i] = r < 40 ? 0 : r < 50 ? static_cast<int32_t>(vocab - 1) : any_id(rng);
        if (r == 99) ids[i] = (rng() & 1) ? -3 : static_cast<int32_t>(vocab + 5);  // bad
      }
      std::lognormal_distribution<float> mag(0.0f, 4.0f);
      std::vector<float> dout(n * c), old(vocab * c);
      for (float& v : dout) v = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
      for (float& v : old) v = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
      const std::vector<float> want = Reference(ids, dout, old, vocab, c, accumulate);
      const std::vector<float> got = SortedRuns(ids, dout, old, vocab, c, accumulate);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "vocab " << vocab << " n " << n << " c " << c << " accumulate " << accumulate;
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

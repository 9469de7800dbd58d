// FlatOffsets (shard_layout.h): the layout of the flat parameter buffers,
// and ShardLayout: the data-parallel ranks' shares of it. Every
// tensor starts on the alignment, none overlaps the next, the padding is
// less than one alignment unit, and the total covers the last tensor --
// over random tensor sizes (printed seed).
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {
namespace {

TEST(FlatOffsetsTest, AlignedBackToBackWithoutOverlap) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> size(1, 5000);
  for (int64_t alignment : {1, 128, 256}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<int64_t> numels(1 + trial % 17);
      for (int64_t& n : numels) n = size(rng);
      const std::vector<int64_t> off = FlatOffsets(numels, alignment);
      ASSERT_EQ(off.size(), numels.size() + 1);
      EXPECT_EQ(off[0], 0);
      for (size_t i = 0; i < numels.size(); ++i) {
        EXPECT_EQ(off[i] % alignment, 0) << i;
        EXPECT_GE(off[i + 1], off[i] + numels[i]) << i;                // no overlap
        EXPECT_LT(off[i + 1] - (off[i] + numels[i]), alignment) << i;  // tight
      }
      EXPECT_EQ(off.back() % alignment, 0);
    }
  }
}

TEST(FlatOffsetsTest, KnownLayout) {
  EXPECT_EQ(FlatOffsets({1, 128, 129, 5}, 128), (std::vector<int64_t>{0, 128, 256, 512, 640}));
  EXPECT_EQ(FlatOffsets({}, 128), (std::vector<int64_t>{0}));
}

// The ranks' shares: every parameter element lies in exactly one rank's
// piece, at the flat element the piece says; each rank's pieces fill its
// sharded buffers without overlap; buckets are whole multiples of
// world x alignment and cover the padded total.
TEST(ShardLayoutTest, SharesPartitionEveryParameter) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> numels(1 + rng() % 30);
    for (int64_t& n : numels) n = 1 + rng() % (rng() % 2 ? 20000 : 300);
    const std::vector<int64_t> off = FlatOffsets(numels, 128);
    for (int world = 1; world <= 5; ++world) {
      const int64_t bucket = rng() % 3 == 0 ? 0 : 1 + rng() % 9000;
      const ShardLayout layout(off, numels, world, bucket, 128);
      EXPECT_EQ(layout.total() % (128 * world), 0);
      EXPECT_GE(layout.total(), off.back());
      int64_t at = 0;
      for (const auto& [begin, end] : layout.buckets()) {
        EXPECT_EQ(begin, at);
        EXPECT_EQ((end - begin) % (128 * world), 0);
        at = end;
      }
      EXPECT_EQ(at, layout.total());
      std::vector<std::vector<int>> seen(numels.size());
      for (size_t p = 0; p < numels.size(); ++p) seen[p].assign(numels[p], 0);
      for (int r = 0; r < world; ++r) {
        std::vector<int> used(layout.share(), 0);
        for (const ParamPiece& piece : layout.PiecesOf(r)) {
          ASSERT_GE(piece.numel, 1);
          EXPECT_EQ(piece.flat, off[piece.param] + piece.first);
          ASSERT_LE(piece.shard + piece.numel, layout.share());
          for (int64_t i = 0; i < piece.numel; ++i) {
            ++seen[piece.param][piece.first + i];
            ++used[piece.shard + i];
          }
        }
        for (int u : used) ASSERT_LE(u, 1);
      }
      for (size_t p = 0; p < numels.size(); ++p) {
        for (int c : seen[p]) ASSERT_EQ(c, 1) << "param " << p << " world " << world;
      }
    }
  }
}

TEST(ShardLayoutTest, KnownSplit) {
  // Two tensors of 300 and 100 elements (flat 0..300, 384..484), 2 ranks,
  // one bucket of 512: rank 0 has [0, 256), rank 1 [256, 512).
  const ShardLayout layout(FlatOffsets({300, 100}, 128), {300, 100}, 2, 0, 128);
  EXPECT_EQ(layout.total(), 512);
  const std::vector<ParamPiece> r0 = layout.PiecesOf(0), r1 = layout.PiecesOf(1);
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(r0[0].param, 0);
  EXPECT_EQ(r0[0].numel, 256);
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(r1[0].param, 0);
  EXPECT_EQ(r1[0].first, 256);
  EXPECT_EQ(r1[0].numel, 44);
  EXPECT_EQ(r1[0].shard, 0);
  EXPECT_EQ(r1[1].param, 1);
  EXPECT_EQ(r1[1].first, 0);
  EXPECT_EQ(r1[1].numel, 100);
  EXPECT_EQ(r1[1].shard, 128);
}

}  // namespace
}  // namespace mnt::trainer

// FlatOffsets (parameters.h): the layout of the flat parameter buffers. Every
// tensor starts on the alignment, none overlaps the next, the padding is
// less than one alignment unit, and the total covers the last tensor --
// over random tensor sizes (printed seed).
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/core/parameters.h"

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

// ZeRO-1's owners: contiguous runs in rank order, every rank some where
// there are enough parameters, about 1/world of the elements each.
TEST(ParamOwnersTest, ContiguousEveryRankBalanced) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> numels(1 + rng() % 40);
    for (int64_t& n : numels) n = 1 + rng() % (rng() % 2 ? 100000 : 300);
    const std::vector<int64_t> off = FlatOffsets(numels, 128);
    for (int world = 1; world <= 8; ++world) {
      const std::vector<int> owners = ParamOwners(off, world);
      ASSERT_EQ(owners.size(), numels.size());
      EXPECT_EQ(owners.front(), 0);
      for (size_t i = 1; i < owners.size(); ++i) {
        EXPECT_TRUE(owners[i] == owners[i - 1] || owners[i] == owners[i - 1] + 1) << i;
      }
      if (static_cast<int>(numels.size()) >= world) EXPECT_EQ(owners.back(), world - 1);
    }
  }
}

TEST(ParamOwnersTest, KnownSplits) {
  // Four equal tensors over two ranks: two each.
  EXPECT_EQ(ParamOwners(FlatOffsets({128, 128, 128, 128}, 128), 2),
            (std::vector<int>{0, 0, 1, 1}));
  // One tensor holds most of the elements: the others still get one each.
  EXPECT_EQ(ParamOwners(FlatOffsets({100000, 10, 10, 10}, 128), 3),
            (std::vector<int>{0, 1, 2, 2}));
  EXPECT_EQ(ParamOwners(FlatOffsets({128, 128}, 1), 1), (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace mnt::trainer

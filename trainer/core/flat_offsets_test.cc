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

}  // namespace
}  // namespace mnt::trainer

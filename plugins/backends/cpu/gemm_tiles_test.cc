// The tiles a GEMM is cut into: they cover the split dimension exactly,
// never outnumber the pool, keep aligned edges, leave small products whole,
// and give a pool's threads work when the product is large enough.
#include "plugins/backends/cpu/gemm_tiles.h"

#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace mnt::cpu {
namespace {

void ExpectValid(int64_t m, int64_t n, int64_t k, int pool) {
  const GemmTiles t = TileGemm(m, n, k, pool);
  SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k << " pool " << pool);
  const int64_t extent = t.by_rows ? m : n;
  ASSERT_GE(t.count, 1);
  EXPECT_LE(t.count, pool);
  EXPECT_EQ(t.by_rows, m >= n);
  int64_t covered = 0;
  for (int64_t i = 0; i < t.count; ++i) {
    EXPECT_EQ(t.Begin(i), covered);
    const int64_t length = t.Length(i, extent);
    ASSERT_GT(length, 0) << "tile " << i;
    if (t.count > 1 && i + 1 < t.count) {
      EXPECT_EQ(length % kGemmTileAlign, 0);
    }
    covered += length;
  }
  EXPECT_EQ(covered, extent);
  if (t.count > 1) {
    EXPECT_GE(m * n * k / t.count, kGemmTileMacs / 2);
  }
}

TEST(GemmTilesTest, TilesCoverTheOutputOncePerShapeAndPool) {
  std::mt19937 rng(20261203);
  std::uniform_int_distribution<int64_t> dim(1, 3000);
  for (int i = 0; i < 2000; ++i) {
    ExpectValid(dim(rng), dim(rng), dim(rng), 1 + static_cast<int>(rng() % 64));
  }
}

TEST(GemmTilesTest, OnePoolThreadOrASmallProductIsOneCall) {
  EXPECT_EQ(TileGemm(4096, 4096, 4096, 1).count, 1);
  EXPECT_EQ(TileGemm(64, 64, 64, 16).count, 1);   // 262K multiply-adds
  EXPECT_EQ(TileGemm(15, 4096, 4096, 2).count, 2);  // split the longer side
  EXPECT_FALSE(TileGemm(15, 4096, 4096, 2).by_rows);
}

TEST(GemmTilesTest, LargeProductsGiveEachPoolThreadATile) {
  // gpt2-tiny's weight-gradient product, the one oneDNN split along K.
  EXPECT_EQ(TileGemm(64, 64, 1024, 2).count, 2);
  EXPECT_EQ(TileGemm(1024, 768, 768, 8).count, 8);
  EXPECT_EQ(TileGemm(1024, 768, 768, 8).size, 128);
}

}  // namespace
}  // namespace mnt::cpu

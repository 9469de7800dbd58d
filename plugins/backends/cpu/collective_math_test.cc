#include "plugins/backends/cpu/collective_math.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::cpu {
namespace {

TEST(ChunkBeginTest, SplitsEvenlyAndCoversEverything) {
  for (int64_t n : {0, 1, 5, 7, 1000, 1001}) {
    for (int w : {1, 2, 3, 7}) {
      EXPECT_EQ(ChunkBegin(n, w, 0), 0);
      EXPECT_EQ(ChunkBegin(n, w, w), n);
      for (int r = 0; r < w; ++r) {
        const int64_t size = ChunkBegin(n, w, r + 1) - ChunkBegin(n, w, r);
        EXPECT_GE(size, n / w) << n << " " << w << " " << r;
        EXPECT_LE(size, n / w + 1) << n << " " << w << " " << r;
      }
    }
  }
  // Equal chunks when n divides: REDUCE_SCATTER relies on it.
  EXPECT_EQ(ChunkBegin(3 * 40, 3, 2), 80);
  EXPECT_EQ(ChunkBegin(int64_t{1} << 40, 4, 3), int64_t{3} << 38);
}

// Fresh random chunks; the reference sums in rank order in fp32 as stated,
// and the same sum in float64 bounds the error.
TEST(ReduceInRankOrderTest, F32SumAvgMaxInRankOrder) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int w : {1, 2, 3, 5}) {
    const int64_t n = 257;
    std::vector<std::vector<float>> data(w, std::vector<float>(n));
    std::vector<const void*> chunks(w);
    for (int k = 0; k < w; ++k) {
      for (float& x : data[k]) x = dist(rng);
      chunks[k] = data[k].data();
    }
    std::vector<float> sum(n), avg(n), mx(n);
    ReduceInRankOrder(chunks.data(), w, n, MNT_DTYPE_F32, MNT_REDUCE_OP_SUM, sum.data());
    ReduceInRankOrder(chunks.data(), w, n, MNT_DTYPE_F32, MNT_REDUCE_OP_AVG, avg.data());
    ReduceInRankOrder(chunks.data(), w, n, MNT_DTYPE_F32, MNT_REDUCE_OP_MAX, mx.data());
    for (int64_t i = 0; i < n; ++i) {
      float ordered = data[0][i];
      double exact = data[0][i];
      float best = data[0][i];
      for (int k = 1; k < w; ++k) {
        ordered += data[k][i];
        exact += data[k][i];
        best = std::max(best, data[k][i]);
      }
      EXPECT_EQ(sum[i], ordered) << "w=" << w << " i=" << i;  // the stated order, bit for bit
      EXPECT_NEAR(sum[i], exact, 1e-5 * (1 + std::fabs(exact)));
      EXPECT_EQ(avg[i], ordered / static_cast<float>(w));
      EXPECT_EQ(mx[i], best);
    }
  }
}

TEST(ReduceInRankOrderTest, SixteenBitRoundsOnceFromTheFp32Sum) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int w = 3;
  const int64_t n = 500;
  for (MNT_DType dtype : {MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    std::vector<std::vector<uint16_t>> data(w, std::vector<uint16_t>(n));
    std::vector<const void*> chunks(w);
    for (int k = 0; k < w; ++k) {
      for (uint16_t& x : data[k]) {
        x = dtype == MNT_DTYPE_F16 ? FloatToHalfBits(dist(rng)) : FloatToBf16Bits(dist(rng));
      }
      chunks[k] = data[k].data();
    }
    std::vector<uint16_t> out(n);
    ReduceInRankOrder(chunks.data(), w, n, dtype, MNT_REDUCE_OP_SUM, out.data());
    auto to_float = [&](uint16_t b) {
      return dtype == MNT_DTYPE_F16 ? HalfBitsToFloat(b) : Bf16BitsToFloat(b);
    };
    for (int64_t i = 0; i < n; ++i) {
      float acc = to_float(data[0][i]);
      for (int k = 1; k < w; ++k) acc += to_float(data[k][i]);
      const uint16_t want = dtype == MNT_DTYPE_F16 ? FloatToHalfBits(acc) : FloatToBf16Bits(acc);
      ASSERT_EQ(out[i], want) << "dtype " << dtype << " i=" << i;
    }
  }
}

// An overflow on one rank must reach every rank: NaN and inf survive.
TEST(ReduceInRankOrderTest, NonFiniteValuesPropagate) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, nan, 2, -inf}, b = {inf, 3, nan, 1};
  std::vector<const void*> chunks = {a.data(), b.data()};
  for (MNT_ReduceOp op : {MNT_REDUCE_OP_SUM, MNT_REDUCE_OP_AVG, MNT_REDUCE_OP_MAX}) {
    std::vector<float> out(4);
    ReduceInRankOrder(chunks.data(), 2, 4, MNT_DTYPE_F32, op, out.data());
    EXPECT_TRUE(std::isinf(out[0])) << op;
    EXPECT_TRUE(std::isnan(out[1])) << op;
    EXPECT_TRUE(std::isnan(out[2])) << op;
    // max(-inf, 1) is 1; a sum with -inf is -inf.
    if (op == MNT_REDUCE_OP_MAX) {
      EXPECT_EQ(out[3], 1.0f);
    } else {
      EXPECT_EQ(out[3], -inf) << op;
    }
  }
}

}  // namespace
}  // namespace mnt::cpu

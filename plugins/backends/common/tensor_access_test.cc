// tensor_access.h on the CPU: loads/stores round-trip every dtype bit-exactly,
// stores round to nearest even, and the row-math helpers match float64
// formulas on random inputs.
#include "plugins/backends/common/tensor_access.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

uint32_t Seed() {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  return seed;
}

TEST(TensorAccess, F32RoundTripIsExact) {
  std::mt19937 rng(Seed());
  std::vector<float> buf(64);
  for (int i = 0; i < 64; ++i) {
    const float v = BitsToFloat(static_cast<uint32_t>(rng()) & 0x7f7fffffu);
    StoreFromFloat(buf.data(), MNT_DTYPE_F32, i, v);
    EXPECT_EQ(FloatToBits(LoadAsFloat(buf.data(), MNT_DTYPE_F32, i)),
              FloatToBits(v));
  }
}

TEST(TensorAccess, SixteenBitStoresRoundLikeFloatConvert) {
  std::mt19937 rng(Seed());
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  std::vector<uint16_t> buf(256);
  for (int i = 0; i < 256; ++i) {
    const float v = dist(rng) / static_cast<float>(1 << (i % 20));
    StoreFromFloat(buf.data(), MNT_DTYPE_F16, i, v);
    EXPECT_EQ(buf[i], FloatToHalfBits(v)) << v;
    EXPECT_EQ(FloatToBits(LoadAsFloat(buf.data(), MNT_DTYPE_F16, i)),
              FloatToBits(RoundToHalf(v)));
    StoreFromFloat(buf.data(), MNT_DTYPE_BF16, i, v);
    EXPECT_EQ(buf[i], FloatToBf16Bits(v)) << v;
    EXPECT_EQ(FloatToBits(LoadAsFloat(buf.data(), MNT_DTYPE_BF16, i)),
              FloatToBits(RoundToBf16(v)));
  }
}

TEST(TensorAccess, KnownRoundings) {
  uint16_t h = 0;
  // 1 + 2^-11 is halfway between two halves: ties to even gives 1.0.
  StoreFromFloat(&h, MNT_DTYPE_F16, 0, 1.0f + std::ldexp(1.0f, -11));
  EXPECT_EQ(h, 0x3c00u);
  StoreFromFloat(&h, MNT_DTYPE_F16, 0, 65520.0f);  // rounds to inf
  EXPECT_EQ(h, 0x7c00u);
  StoreFromFloat(&h, MNT_DTYPE_BF16, 0, 1.0f + std::ldexp(1.0f, -8));
  EXPECT_EQ(h, 0x3f80u);  // tie to even: 1.0
  StoreFromFloat(&h, MNT_DTYPE_BF16, 0, 1.0f + 3 * std::ldexp(1.0f, -8));
  EXPECT_EQ(h, 0x3f82u);  // tie to even: up
  h = 0x7e00u;  // quiet NaN stays NaN
  EXPECT_TRUE(std::isnan(LoadAsFloat(&h, MNT_DTYPE_F16, 0)));
}

TEST(TensorAccess, CrossEntropyGradientMatchesFloat64) {
  std::mt19937 rng(Seed());
  std::normal_distribution<double> dist(0.0, 3.0);
  for (int width : {1, 7, 33}) {
    std::vector<double> x(width);
    for (double& e : x) e = static_cast<float>(dist(rng));
    double max = x[0];
    for (double e : x) max = std::max(max, e);
    double sum = 0;
    for (double e : x) sum += std::exp(e - max);
    const int target = width / 2;
    for (int j = 0; j < width; ++j) {
      const double expected = (std::exp(x[j] - max) / sum - (j == target)) * 0.25;
      const float got = CrossEntropyGradient(
          static_cast<float>(x[j]), static_cast<float>(max),
          static_cast<float>(1.0 / sum), j == target, 0.25f);
      ASSERT_FALSE(std::isnan(got));
      EXPECT_NEAR(got, expected, 1e-6 + 1e-5 * std::fabs(expected));
    }
  }
}

TEST(TensorAccess, LayerNormInputGradientMatchesFloat64) {
  std::mt19937 rng(Seed());
  std::normal_distribution<double> dist(0.0, 1.0);
  for (int i = 0; i < 100; ++i) {
    const double dxhat = static_cast<float>(dist(rng)), xhat = static_cast<float>(dist(rng));
    const double a = static_cast<float>(dist(rng)), b = static_cast<float>(dist(rng));
    const double rstd = static_cast<float>(std::fabs(dist(rng)) + 0.1);
    const double expected = rstd * (dxhat - a - xhat * b);
    const float got = LayerNormInputGradient(
        static_cast<float>(dxhat), static_cast<float>(xhat),
        static_cast<float>(a), static_cast<float>(b), static_cast<float>(rstd));
    EXPECT_NEAR(got, expected, 1e-5 * (1 + std::fabs(expected)));
  }
}

}  // namespace
}  // namespace mnt

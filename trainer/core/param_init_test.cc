#include "trainer/core/param_init.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(ParamInitTest, NormalHasRequestedMoments) {
  std::vector<float> v;
  InitParameter(MNT_PARAM_INIT_NORMAL, 0.5f, 42, 3, 200000, &v);
  double sum = 0, sq = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += double(x) * x;
  }
  const double mean = sum / v.size(), var = sq / v.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5e-3);             // 4 sigma of the sample mean
  EXPECT_NEAR(std::sqrt(var), 0.5, 5e-3);
}

TEST(ParamInitTest, UniformStaysInBounds) {
  std::vector<float> v;
  InitParameter(MNT_PARAM_INIT_UNIFORM, 0.1f, 7, 0, 10000, &v);
  float lo = 1, hi = -1;
  for (float x : v) { lo = std::min(lo, x); hi = std::max(hi, x); }
  EXPECT_GE(lo, -0.1f);
  EXPECT_LE(hi, 0.1f);
  EXPECT_LT(lo, -0.09f);  // and actually spans the range
  EXPECT_GT(hi, 0.09f);
}

TEST(ParamInitTest, DeterministicPerSeedAndIndependentPerParameter) {
  std::vector<float> a, b, c, d;
  InitParameter(MNT_PARAM_INIT_NORMAL, 1.0f, 1, 0, 64, &a);
  InitParameter(MNT_PARAM_INIT_NORMAL, 1.0f, 1, 0, 64, &b);
  InitParameter(MNT_PARAM_INIT_NORMAL, 1.0f, 1, 1, 64, &c);
  InitParameter(MNT_PARAM_INIT_NORMAL, 1.0f, 2, 0, 64, &d);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(ParamInitTest, ZerosAndOnes) {
  std::vector<float> z, o;
  InitParameter(MNT_PARAM_INIT_ZEROS, 1.0f, 1, 0, 5, &z);
  InitParameter(MNT_PARAM_INIT_ONES, 1.0f, 1, 0, 5, &o);
  EXPECT_EQ(z, std::vector<float>(5, 0.0f));
  EXPECT_EQ(o, std::vector<float>(5, 1.0f));
}

}  // namespace
}  // namespace mnt::trainer

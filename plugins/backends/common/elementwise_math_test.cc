#include "plugins/backends/common/elementwise_math.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace mnt {
namespace {

double GeluTanhReference(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

TEST(ElementwiseMathTest, GeluTanhAndDerivativeMatchFloat64) {
  const uint32_t seed = std::random_device{}();
  std::printf("ElementwiseMathTest seed %u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  for (int i = 0; i < 10000; ++i) {
    const float x = dist(rng);
    const double want = GeluTanhReference(x);
    const float got = GeluTanh(x);
    ASSERT_TRUE(std::isfinite(got));
    ASSERT_NEAR(got, want, 1e-5 * std::max(1.0, std::fabs(want))) << x;
    // Central difference of the float64 forward (error O(h^2) ~ 1e-10).
    const double h = 1e-5;
    const double fd = (GeluTanhReference(x + h) - GeluTanhReference(x - h)) / (2 * h);
    const float dgot = GeluTanhBackward(x, 1.0f);
    ASSERT_TRUE(std::isfinite(dgot));
    ASSERT_NEAR(dgot, fd, 1e-5 * std::max(1.0, std::fabs(fd))) << x;
  }
}

TEST(ElementwiseMathTest, Relu) {
  EXPECT_EQ(Relu(-2.0f), 0.0f);
  EXPECT_EQ(Relu(3.0f), 3.0f);
  EXPECT_EQ(ReluBackward(-1.0f, 5.0f), 0.0f);
  EXPECT_EQ(ReluBackward(0.0f, 5.0f), 0.0f);
  EXPECT_EQ(ReluBackward(2.0f, 5.0f), 5.0f);
}

TEST(ElementwiseMathTest, UnscaleAndCheckFlagsInfAndNan) {
  bool found = false;
  EXPECT_EQ(UnscaleAndCheck(8.0f, 0.25f, &found), 2.0f);
  EXPECT_FALSE(found);
  UnscaleAndCheck(std::numeric_limits<float>::infinity(), 0.25f, &found);
  EXPECT_TRUE(found);
  found = false;
  UnscaleAndCheck(-std::numeric_limits<float>::quiet_NaN(), 0.25f, &found);
  EXPECT_TRUE(found);
  found = false;
  UnscaleAndCheck(std::numeric_limits<float>::max(), 0.25f, &found);
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace mnt

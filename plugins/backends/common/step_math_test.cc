#include "plugins/backends/common/step_math.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace mnt {
namespace {

uint32_t Seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed %u\n", test, seed);
  return seed;
}

TEST(StepMathTest, ClipCoefficientMatchesFloat64) {
  std::mt19937 rng(Seed("ClipCoefficientMatchesFloat64"));
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  for (int i = 0; i < 10000; ++i) {
    const float n2 = u(rng) * u(rng), max_norm = u(rng);
    const long double norm = std::sqrt(static_cast<long double>(n2));
    const long double want =
        norm > max_norm ? max_norm / (norm + 1e-6L) : 1.0L;
    const float got = ClipCoefficient(n2, max_norm, false);
    ASSERT_FALSE(std::isnan(got));
    EXPECT_NEAR(got, static_cast<double>(want), 1e-6 * static_cast<double>(want))
        << "norm^2 " << n2 << " max_norm " << max_norm;
    EXPECT_LE(got, 1.0f);
  }
}

TEST(StepMathTest, ClipCoefficientIsOneWithoutClippingOrOnOverflow) {
  EXPECT_EQ(ClipCoefficient(100.0f, 0.0f, false), 1.0f);
  EXPECT_EQ(ClipCoefficient(100.0f, -1.0f, false), 1.0f);
  EXPECT_EQ(ClipCoefficient(100.0f, 1.0f, true), 1.0f);
  EXPECT_EQ(ClipCoefficient(std::numeric_limits<float>::infinity(), 1.0f, true), 1.0f);
  EXPECT_EQ(ClipCoefficient(std::nanf(""), 1.0f, false), 1.0f);
  EXPECT_EQ(ClipCoefficient(0.25f, 1.0f, false), 1.0f);  // norm 0.5 < 1
  EXPECT_EQ(ClipCoefficient(4.0f, 1.0f, false),
            static_cast<float>(1.0 / (2.0 + 1e-6)));
}

TEST(StepMathTest, PowIntAndAdamWCoefficientsMatchFloat64) {
  std::mt19937 rng(Seed("PowIntAndAdamWCoefficientsMatchFloat64"));
  std::uniform_int_distribution<int64_t> step(1, 2000000);
  for (int i = 0; i < 2000; ++i) {
    const int64_t t = i < 20 ? i + 1 : step(rng);
    for (float beta : {0.9f, 0.95f, 0.999f}) {
      const long double want = std::pow(static_cast<long double>(beta), t);
      // Squaring compounds rounding: relative error grows like t * eps.
      EXPECT_NEAR(PowInt(beta, t), static_cast<double>(want),
                  1e-15 * static_cast<double>(t) * static_cast<double>(want) + 1e-300);
    }
    const AdamWCoefficients c = AdamWCoefficientsForStep(1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, t);
    const long double bc1 = 1.0L - std::pow(static_cast<long double>(0.9f), t);
    const long double bc2 = 1.0L - std::pow(static_cast<long double>(0.999f), t);
    const double want_step = static_cast<double>(1e-3f / bc1);
    const double want_bc2 = static_cast<double>(std::sqrt(bc2));
    EXPECT_NEAR(c.step_size, want_step, 1e-6 * want_step) << t;
    EXPECT_NEAR(c.bias_correction2_sqrt, want_bc2, 1e-6 * want_bc2) << t;
  }
  EXPECT_EQ(PowInt(0.5, 0), 1.0);
  EXPECT_EQ(PowInt(0.5, 10), 1.0 / 1024.0);
}

}  // namespace
}  // namespace mnt

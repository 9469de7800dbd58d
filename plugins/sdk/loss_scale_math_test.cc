// The loss-scale recipe written once (loss_scale_math.h): GradScaler's update
// by default, DeepSpeed's hysteresis and min_loss_scale, Apex's ceiling.
#include "plugins/sdk/loss_scale_math.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <random>

#include "gtest/gtest.h"

namespace mnt {
namespace {

uint32_t Seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed %u\n", test, seed);
  return seed;
}

struct State {
  float scale = 65536.0f;
  int64_t growth = 0, hysteresis = 0;
};

void Step(bool inf, const LossScaleRecipeParams& p, State* s) {
  UpdateLossScale(inf, p, &s->scale, &s->growth, &s->hysteresis);
}

TEST(LossScaleMathTest, DefaultsAreGradScalers) {
  const LossScaleRecipeParams p;
  EXPECT_EQ(p.growth_factor, 2.0);
  EXPECT_EQ(p.backoff_factor, 0.5);
  EXPECT_EQ(p.growth_interval, 2000);
  EXPECT_EQ(p.hysteresis, 1);
  EXPECT_EQ(LossScaleRecipeParams::kDefaultInitScale, 65536.0f);
}

TEST(LossScaleMathTest, BacksOffGrowsAndCounts) {
  LossScaleRecipeParams p;
  p.growth_interval = 3;
  State s;
  s.growth = 2;
  Step(true, p, &s);
  EXPECT_EQ(s.scale, 32768.0f);
  EXPECT_EQ(s.growth, 0);
  Step(false, p, &s);
  Step(false, p, &s);
  EXPECT_EQ(s.scale, 32768.0f);
  EXPECT_EQ(s.growth, 2);
  Step(false, p, &s);  // third clean step
  EXPECT_EQ(s.scale, 65536.0f);
  EXPECT_EQ(s.growth, 0);
}

TEST(LossScaleMathTest, NeverGrowsToInf) {
  LossScaleRecipeParams p;
  p.growth_interval = 1;
  State s;
  s.scale = FLT_MAX / 1.5f;  // *2 overflows fp32
  Step(false, p, &s);
  EXPECT_EQ(s.scale, FLT_MAX / 1.5f);
  s.scale = 0x1.fffffep+126f;  // just below the rounding threshold
  Step(false, p, &s);
  EXPECT_EQ(s.scale, FLT_MAX);
}

TEST(LossScaleMathTest, MatchesFloat64WithOddFactors) {
  std::mt19937 rng(Seed("MatchesFloat64WithOddFactors"));
  std::uniform_real_distribution<double> growth(1.01, 4.0), backoff(0.05, 0.99);
  std::uniform_real_distribution<float> log2_scale(-20.0f, 100.0f);
  for (int i = 0; i < 1000; ++i) {
    LossScaleRecipeParams p;
    p.growth_factor = growth(rng);
    p.backoff_factor = backoff(rng);
    p.growth_interval = 1;
    const float s0 = std::exp2(log2_scale(rng));
    State s;
    s.scale = s0;
    Step(true, p, &s);
    EXPECT_EQ(s.scale, static_cast<float>(static_cast<double>(s0) * p.backoff_factor));
    s.scale = s0;
    Step(false, p, &s);
    EXPECT_EQ(s.scale, static_cast<float>(static_cast<double>(s0) * p.growth_factor));
  }
}

// DeepSpeed's hysteresis=2 (consecutive): the first overflow of a run is
// skipped without a backoff, every further one in the run backs off, and a
// clean step starts a new run.
TEST(LossScaleMathTest, HysteresisBacksOffOnlyFromTheNthOverflowInARow) {
  LossScaleRecipeParams p;
  p.hysteresis = 2;
  p.growth_interval = 1000;
  State s;
  Step(true, p, &s);
  EXPECT_EQ(s.scale, 65536.0f);
  EXPECT_EQ(s.hysteresis, 1);
  Step(true, p, &s);
  EXPECT_EQ(s.scale, 32768.0f);
  EXPECT_EQ(s.hysteresis, 1);
  Step(true, p, &s);
  EXPECT_EQ(s.scale, 16384.0f);
  Step(false, p, &s);
  EXPECT_EQ(s.hysteresis, 0);
  EXPECT_EQ(s.growth, 1);
  Step(true, p, &s);  // a new run: absorbed again, growth tracker reset
  EXPECT_EQ(s.scale, 16384.0f);
  EXPECT_EQ(s.growth, 0);
  // Alternating overflow / clean never backs off with hysteresis 2.
  for (int i = 0; i < 10; ++i) {
    Step(false, p, &s);
    Step(true, p, &s);
  }
  EXPECT_EQ(s.scale, 16384.0f);
}

TEST(LossScaleMathTest, MinScaleFloorsBackoffsAndMaxScaleCapsGrowth) {
  LossScaleRecipeParams p;
  p.growth_interval = 1;
  p.min_scale = 1000.0f;
  p.max_scale = 100000.0f;
  State s;
  s.scale = 1500.0f;
  Step(true, p, &s);
  EXPECT_EQ(s.scale, 1000.0f);  // 750 floored
  Step(true, p, &s);
  EXPECT_EQ(s.scale, 1000.0f);
  s.scale = 65536.0f;
  Step(false, p, &s);
  EXPECT_EQ(s.scale, 100000.0f);  // 131072 capped
  Step(false, p, &s);
  EXPECT_EQ(s.scale, 100000.0f);
}

// The device keeps I32 trackers: the same recipe gives the same bits.
TEST(LossScaleMathTest, Int32TrackersGiveTheSameBits) {
  std::mt19937 rng(Seed("Int32TrackersGiveTheSameBits"));
  LossScaleRecipeParams p;
  p.growth_interval = 3;
  p.hysteresis = 3;
  p.min_scale = 4.0f;
  p.max_scale = 1e6f;
  State a;
  float scale32 = a.scale;
  int32_t g32 = 0, h32 = 0;
  std::bernoulli_distribution inf(0.4);
  for (int i = 0; i < 5000; ++i) {
    const bool f = inf(rng);
    Step(f, p, &a);
    UpdateLossScale(f, p, &scale32, &g32, &h32);
    ASSERT_EQ(a.scale, scale32);
    ASSERT_EQ(a.growth, g32);
    ASSERT_EQ(a.hysteresis, h32);
    ASSERT_GE(a.scale, p.min_scale);
    ASSERT_LE(a.scale, p.max_scale);
  }
}

TEST(LossScaleMathTest, InvScaleIsTheRoundedDoubleReciprocal) {
  EXPECT_EQ(InvScale(65536.0f), 1.0f / 65536.0f);
  EXPECT_EQ(InvScale(3.0f), static_cast<float>(1.0 / 3.0));
  EXPECT_TRUE(std::isinf(InvScale(0.0f)));
}

}  // namespace
}  // namespace mnt

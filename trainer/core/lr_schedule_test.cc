#include "trainer/core/lr_schedule.h"

#include <cmath>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(LrScheduleTest, WarmupIsLinearAndNeverZero) {
  LrSchedule s{"cosine", 1e-2, 10, 100, 0.1};
  EXPECT_DOUBLE_EQ(LearningRate(s, 0), 1e-3);
  EXPECT_DOUBLE_EQ(LearningRate(s, 4), 5e-3);
  EXPECT_DOUBLE_EQ(LearningRate(s, 9), 1e-2);
}

TEST(LrScheduleTest, CosineDecaysToFloorAndStays) {
  LrSchedule s{"cosine", 1e-2, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(LearningRate(s, 10), 1e-2);
  // Halfway through the decay the cosine sits midway between peak and floor.
  EXPECT_NEAR(LearningRate(s, 60), 0.5 * (1e-2 + 1e-3), 1e-15);
  EXPECT_NEAR(LearningRate(s, 110), 1e-3, 1e-15);
  EXPECT_NEAR(LearningRate(s, 500), 1e-3, 1e-15);
  for (int64_t i = 11; i < 110; ++i) {
    EXPECT_LT(LearningRate(s, i), LearningRate(s, i - 1)) << "step " << i;
  }
}

TEST(LrScheduleTest, ConstantAfterWarmup) {
  LrSchedule s{"constant", 0.5, 2, 100, 0.0};
  EXPECT_DOUBLE_EQ(LearningRate(s, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate(s, 2), 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(s, 99), 0.5);
}

TEST(LrScheduleTest, LinearDecaysInEqualStepsToTheFloor) {
  LrSchedule s{"linear", 1e-2, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(LearningRate(s, 10), 1e-2);
  EXPECT_NEAR(LearningRate(s, 35), 1e-2 - 0.25 * 9e-3, 1e-15);
  EXPECT_NEAR(LearningRate(s, 110), 1e-3, 1e-15);
  EXPECT_NEAR(LearningRate(s, 300), 1e-3, 1e-15);
  for (int64_t i = 12; i <= 110; ++i) {
    const double drop = LearningRate(s, i - 1) - LearningRate(s, i);
    EXPECT_NEAR(drop, 9e-3 / 100, 1e-15) << "step " << i;
  }
  // Hugging Face's linear schedule ends at 0.
  LrSchedule hf{"linear", 1e-2, 0, 100, 0.0};
  EXPECT_NEAR(LearningRate(hf, 100), 0.0, 1e-18);
}

TEST(LrScheduleTest, WarmupRatioRoundsUpAndWinsOverSteps) {
  EXPECT_EQ(WarmupSteps(30, 0.0, 300), 30);
  EXPECT_EQ(WarmupSteps(30, 0.1, 300), 30);
  EXPECT_EQ(WarmupSteps(30, 0.05, 333), 17);  // 16.65 -> 17
  EXPECT_EQ(WarmupSteps(0, 0.001, 10), 1);
}

}  // namespace
}  // namespace mnt::trainer

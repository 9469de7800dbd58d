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

}  // namespace
}  // namespace mnt::trainer

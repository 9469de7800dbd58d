// fp16 dynamic loss scaling, end to end through the trainer: an initial scale
// that overflows fp16 gradients skips the first steps, backs off and grows
// exactly as PyTorch's GradScaler would, and skipped steps leave the weights
// and optimizer state untouched.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using testing::InTreePluginDirs;
using testing::MakeTrainer;
using testing::RecordingSink;
using testing::TempDir;
using testing::TestConfig;

// torch.cuda.amp.GradScaler.update() (the _amp_update_scale_ kernel), written
// out independently: given whether each step found inf/NaN, the scale each
// step uses.
std::vector<float> GradScalerScales(const std::vector<bool>& found_inf,
                                    float init, float growth, float backoff,
                                    int interval) {
  std::vector<float> used;
  float scale = init;
  int tracker = 0;
  for (bool inf : found_inf) {
    used.push_back(scale);
    if (inf) {
      scale *= backoff;
      tracker = 0;
    } else if (++tracker == interval) {
      const float grown = scale * growth;
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    }
  }
  return used;
}

TEST(LossScalingTest, OverflowingInitialScaleBacksOffAndGrowsLikeGradScaler) {
  TrainConfig c = TestConfig("fp16");
  c.set_steps(80);
  c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 40));  // 2^40
  c.mutable_loss_scale()->set_growth_interval(10);
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  RecordingSink sink;
  ASSERT_TRUE((*trainer)->Train(&sink).ok());
  ASSERT_EQ(sink.steps.size(), 80u);

  std::vector<bool> skipped;
  std::vector<float> scales;
  for (const StepMetrics& m : sink.steps) {
    skipped.push_back(m.skipped);
    scales.push_back(static_cast<float>(m.loss_scale));
  }
  // 2^40 times any real gradient overflows fp16 (max 65504): the run must
  // start with skipped steps, and must stop skipping once the scale is sane.
  ASSERT_TRUE(skipped[0]);
  int first_clean = 0;
  while (first_clean < 80 && skipped[first_clean]) ++first_clean;
  ASSERT_LT(first_clean, 40) << "the scale never backed off far enough";
  EXPECT_LE(scales[first_clean], 65536.0f * 64);

  EXPECT_EQ(scales, GradScalerScales(skipped, std::ldexp(1.0f, 40), 2.0f, 0.5f, 10));
  // Some growth must actually have happened after the first clean stretch.
  bool grew = false;
  for (size_t i = 1; i < scales.size(); ++i) grew |= scales[i] > scales[i - 1];
  EXPECT_TRUE(grew);
  const FinalReport r = (*trainer)->Report();
  int64_t n_skipped = 0;
  for (bool s : skipped) n_skipped += s;
  EXPECT_EQ(r.skipped_steps, n_skipped);
  EXPECT_TRUE(std::isfinite(r.last_eval.loss));
}

TEST(LossScalingTest, SkippedStepLeavesWeightsAndOptimizerStateUntouched) {
  TrainConfig c = TestConfig("fp16");
  c.set_steps(10);
  c.set_eval_every(0);
  c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 60));
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  const std::string before = TempDir() + "/skip_before.ckpt";
  const std::string after = TempDir() + "/skip_after.ckpt";
  ASSERT_TRUE((*trainer)->SaveCheckpoint(before).ok());
  RecordingSink sink;
  ASSERT_TRUE((*trainer)->TrainUntil(3, &sink).ok());
  for (const StepMetrics& m : sink.steps) ASSERT_TRUE(m.skipped) << m.step;
  ASSERT_TRUE((*trainer)->SaveCheckpoint(after).ok());

  auto a = ReadCheckpoint(before);
  auto b = ReadCheckpoint(after);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->tensors_size(), b->tensors_size());
  for (int i = 0; i < a->tensors_size(); ++i) {
    EXPECT_EQ(a->tensors(i).name(), b->tensors(i).name());
    EXPECT_TRUE(a->tensors(i).data() == b->tensors(i).data())
        << a->tensors(i).name() << " changed during a skipped step";
  }
  EXPECT_EQ(b->loss_scale(), std::ldexp(1.0f, 57));  // three backoffs
  EXPECT_EQ(b->loss_scale_skipped_steps(), 3);
}

TEST(LossScalingTest, StaticScaleNeverChanges) {
  TrainConfig c = TestConfig("fp16");
  c.set_steps(150);
  c.mutable_loss_scale()->set_mode("static");
  c.mutable_loss_scale()->set_init_scale(128);
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  RecordingSink sink;
  ASSERT_TRUE((*trainer)->Train(&sink).ok());
  for (const StepMetrics& m : sink.steps) {
    EXPECT_EQ(m.loss_scale, 128.0);
    EXPECT_FALSE(m.skipped);
  }
  EXPECT_GT((*trainer)->Report().last_eval.accuracy, 0.9);
}

TEST(LossScalingTest, Bf16RefusesLossScaling) {
  TrainConfig c = TestConfig("bf16");
  c.mutable_loss_scale()->set_mode("dynamic");
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_FALSE(trainer.ok());
  EXPECT_NE(trainer.status().message().find("fp16"), std::string::npos)
      << trainer.status();
}

}  // namespace
}  // namespace mnt::trainer

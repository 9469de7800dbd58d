// fp16 dynamic loss scaling, end to end through the trainer: an initial scale
// that overflows fp16 gradients skips the first steps, backs off and grows
// exactly as PyTorch's GradScaler would, and skipped steps leave the weights
// and optimizer state untouched — with the scale kept on the device (ABI 1.4,
// --device_loss_scaling=on) and on the host (off); both paths give the same
// bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
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

// DeepSpeed's DynamicLossScaler.update_scale with consecutive_hysteresis=True
// and min_loss_scale, written out independently in DeepSpeed's own terms
// (cur_hysteresis counts down from `hysteresis`; last_overflow_iter drives
// growth). The scale each step uses.
std::vector<float> DeepSpeedScales(const std::vector<bool>& found_inf, float init,
                                   int hysteresis, int window, float min_scale) {
  std::vector<float> used;
  float cur_scale = init;
  int cur_hysteresis = hysteresis;
  int64_t cur_iter = 0, last_overflow_iter = -1;
  for (bool overflow : found_inf) {
    used.push_back(cur_scale);
    if (overflow) {
      if (hysteresis == 1 || cur_hysteresis == 1) {
        cur_scale = std::max(cur_scale / 2.0f, min_scale);
      } else {
        cur_hysteresis -= 1;
      }
      last_overflow_iter = cur_iter;
    } else {
      cur_hysteresis = hysteresis;  // consecutive_hysteresis
      if ((cur_iter - last_overflow_iter) % window == 0) cur_scale *= 2.0f;
    }
    ++cur_iter;
  }
  return used;
}

// Runs each test with the scale on the device ("on") and on the host ("off").
class LossScalingTest : public ::testing::TestWithParam<std::string> {
 protected:
  TrainConfig Fp16Config() {
    TrainConfig c = TestConfig("fp16");
    c.set_device_loss_scaling(GetParam());
    return c;
  }
  void ExpectPath(const Trainer& t) {
    EXPECT_EQ(t.device_loss_scaling(), GetParam() == "on");
  }
};

TEST_P(LossScalingTest, OverflowingInitialScaleBacksOffAndGrowsLikeGradScaler) {
  TrainConfig c = Fp16Config();
  c.set_steps(80);
  c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 40));  // 2^40
  c.mutable_loss_scale()->set_growth_interval(10);
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ExpectPath(**trainer);
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

TEST_P(LossScalingTest, SkippedStepLeavesWeightsAndOptimizerStateUntouched) {
  TrainConfig c = Fp16Config();
  c.set_steps(10);
  c.set_eval_every(0);
  c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 60));
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ExpectPath(**trainer);
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

// --precision_options=hysteresis=2,min_scale=...: the first overflow of a run
// is skipped without a backoff, later ones in the run back off, never below
// the floor; the device and host paths give DeepSpeed's sequence (and so the
// same bits as each other).
TEST_P(LossScalingTest, HysteresisFromPrecisionOptionsFollowsDeepSpeed) {
  TrainConfig c = Fp16Config();
  c.set_steps(60);
  c.set_eval_every(0);
  c.set_precision_options("hysteresis=2,min_scale=1024");
  c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 40));
  c.mutable_loss_scale()->set_growth_interval(4);
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(c, &registry);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ExpectPath(**trainer);
  EXPECT_NE((*trainer)->loss_scaling_description().find(
                GetParam() == "on" ? "on the device" : "on the host"),
            std::string::npos)
      << (*trainer)->loss_scaling_description();
  RecordingSink sink;
  ASSERT_TRUE((*trainer)->Train(&sink).ok());
  std::vector<bool> skipped;
  std::vector<float> scales;
  for (const StepMetrics& m : sink.steps) {
    skipped.push_back(m.skipped);
    scales.push_back(static_cast<float>(m.loss_scale));
  }
  ASSERT_TRUE(skipped[0] && skipped[1]);
  EXPECT_EQ(scales[1], scales[0]) << "the first overflow must not back off";
  EXPECT_EQ(scales[2], scales[0] / 2) << "the second in a row backs off";
  EXPECT_EQ(scales, DeepSpeedScales(skipped, std::ldexp(1.0f, 40), 2, 4, 1024.0f));
  int runs_of_one = 0;  // isolated overflows: skipped, never backed off
  for (size_t i = 1; i + 1 < skipped.size(); ++i) {
    runs_of_one += skipped[i] && !skipped[i - 1] && !skipped[i + 1];
  }
  EXPECT_GT(runs_of_one, 0) << "growth every 4 steps should overflow now and then";
}

TEST(LossScalingTest, BadPrecisionOptionsAreRefusedInOneLine) {
  PluginRegistry registry(InTreePluginDirs());
  TrainConfig c = TestConfig("fp16");
  c.set_precision_options("hysteresis=0");
  auto t = MakeTrainer(c, &registry);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "precision 'fp16' loss scaling: fp16 precision options: hysteresis=0 must "
            "be in [1, 1000000] (1 backs off on every overflow)");
  c = TestConfig("bf16");
  c.set_precision_options("hysteresis=2");
  t = MakeTrainer(c, &registry);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bf16 takes no precision options"), std::string::npos)
      << t.status();
}

INSTANTIATE_TEST_SUITE_P(DeviceAndHost, LossScalingTest, ::testing::Values("on", "off"));

// Losses, scales, skips, grad norms, weights, optimizer state and the scaler
// state agree bit for bit between the two paths, through injected overflows
// (2^40 overflows fp16 at once), growth, clipping and accumulation.
TEST(DeviceLossScalingTest, DeviceAndHostPathsAreBitIdentical) {
  // AdamW with GradScaler's recipe, AdamW with --precision_options=
  // hysteresis=2 (the hysteresis tracker on the device), SGD.
  for (const auto& [optimizer, precision_options] :
       std::vector<std::pair<std::string, std::string>>{
           {"adamw", ""}, {"adamw", "hysteresis=2"}, {"sgd", ""}}) {
    SCOPED_TRACE(optimizer + " " + precision_options);
    TrainConfig c = TestConfig("fp16");
    c.set_precision_options(precision_options);
    c.set_steps(60);
    c.set_grad_accum_steps(2);
    c.set_eval_every(0);
    c.set_clip_grad_norm(0.5);
    c.mutable_optimizer()->set_name(optimizer);
    c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 40));
    c.mutable_loss_scale()->set_growth_interval(7);
    PluginRegistry registry(InTreePluginDirs());
    RecordingSink sinks[2];
    std::string ckpts[2];
    for (int on = 0; on < 2; ++on) {
      c.set_device_loss_scaling(on ? "on" : "off");
      auto t = MakeTrainer(c, &registry);
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_EQ((*t)->device_loss_scaling(), on == 1);
      ASSERT_TRUE((*t)->Train(&sinks[on]).ok());
      ckpts[on] = TempDir() + "/bit_identical_" + optimizer + (precision_options.empty() ? "" : "_h2") +
                  (on ? "_on" : "_off") + ".ckpt";
      ASSERT_TRUE((*t)->SaveCheckpoint(ckpts[on]).ok());
    }
    ASSERT_EQ(sinks[0].steps.size(), 60u);
    ASSERT_EQ(sinks[1].steps.size(), 60u);
    int skipped = 0, clipped_or_grown = 0;
    for (size_t i = 0; i < 60; ++i) {
      const StepMetrics &h = sinks[0].steps[i], &d = sinks[1].steps[i];
      EXPECT_EQ(d.loss, h.loss) << "step " << i + 1;
      EXPECT_EQ(d.loss_scale, h.loss_scale) << "step " << i + 1;
      EXPECT_EQ(d.skipped, h.skipped) << "step " << i + 1;
      EXPECT_EQ(d.skipped_steps, h.skipped_steps) << "step " << i + 1;
      EXPECT_EQ(d.grad_norm, h.grad_norm) << "step " << i + 1;
      ASSERT_FALSE(std::isnan(d.loss));
      skipped += h.skipped;
      clipped_or_grown += i > 0 && h.loss_scale > sinks[0].steps[i - 1].loss_scale;
    }
    EXPECT_GT(skipped, 3) << "the injected overflows did not happen";
    EXPECT_GT(clipped_or_grown, 0) << "the scale never grew";
    auto a = ReadCheckpoint(ckpts[0]);
    auto b = ReadCheckpoint(ckpts[1]);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->loss_scale(), b->loss_scale());
    EXPECT_EQ(a->loss_scale_growth_tracker(), b->loss_scale_growth_tracker());
    EXPECT_EQ(a->loss_scale_skipped_steps(), b->loss_scale_skipped_steps());
    EXPECT_EQ(a->loss_scale_hysteresis_tracker(), b->loss_scale_hysteresis_tracker());
    EXPECT_EQ(a->metadata().at("applied_steps"), b->metadata().at("applied_steps"));
    ASSERT_EQ(a->tensors_size(), b->tensors_size());
    for (int i = 0; i < a->tensors_size(); ++i) {
      EXPECT_TRUE(a->tensors(i).data() == b->tensors(i).data()) << a->tensors(i).name();
    }
  }
}

// The device path only reads the device scalars for steps a sink reports.
class SparseSink : public RecordingSink {
 public:
  bool NeedsStepMetrics(int64_t step, int64_t) const override { return step % 5 == 0; }
};

TEST(DeviceLossScalingTest, ReportsOnlyTheStepsASinkAsksFor) {
  TrainConfig c = TestConfig("fp16");
  c.set_steps(20);
  c.set_eval_every(0);
  c.set_device_loss_scaling("on");
  c.mutable_loss_scale()->set_init_scale(std::ldexp(1.0, 40));
  PluginRegistry registry(InTreePluginDirs());
  auto t = MakeTrainer(c, &registry);
  ASSERT_TRUE(t.ok()) << t.status();
  SparseSink sink;
  ASSERT_TRUE((*t)->Train(&sink).ok());
  ASSERT_EQ(sink.steps.size(), 4u);
  for (const StepMetrics& m : sink.steps) EXPECT_EQ(m.step % 5, 0);
  // The report and the scaler state still count every skipped step.
  EXPECT_GE((*t)->Report().skipped_steps, sink.steps.back().skipped_steps);
  EXPECT_EQ((*t)->Report().skipped_steps, sink.steps.back().skipped_steps);
}

TEST(DeviceLossScalingTest, OnIsRefusedWithoutDynamicScalingAndAutoFallsBack) {
  PluginRegistry registry(InTreePluginDirs());
  for (const char* precision : {"bf16", "fp32"}) {
    TrainConfig c = TestConfig(precision);
    c.set_device_loss_scaling("on");
    auto t = MakeTrainer(c, &registry);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message(),
              std::string("--device_loss_scaling=on: precision '") + precision +
                  "' does not use dynamic loss scaling (use auto or off)");
  }
  TrainConfig c = TestConfig("fp16");
  c.mutable_loss_scale()->set_mode("static");
  c.set_device_loss_scaling("on");
  EXPECT_FALSE(MakeTrainer(c, &registry).ok());
  c.set_device_loss_scaling("auto");
  auto t = MakeTrainer(c, &registry);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE((*t)->device_loss_scaling());
  c.mutable_loss_scale()->set_mode("");
  auto d = MakeTrainer(c, &registry);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE((*d)->device_loss_scaling()) << "auto: the CPU backend supports the ops";
  // Factors fp32 cannot hold exactly cannot run on the device.
  c.mutable_loss_scale()->set_growth_factor(1.1);
  c.set_device_loss_scaling("on");
  auto odd = MakeTrainer(c, &registry);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("must be exact in fp32"), std::string::npos)
      << odd.status();
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

// Checkpoint resume reproduces the uninterrupted run bit for bit, and bad
// checkpoints are refused without touching the run's state or the file.
#include <fstream>
#include <iterator>
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

std::vector<double> Losses(const RecordingSink& s) {
  std::vector<double> v;
  for (const StepMetrics& m : s.steps) v.push_back(m.loss);
  return v;
}

class ResumeTest : public ::testing::TestWithParam<std::string> {};

// "fp16_device" / "fp16_host": fp16 with --device_loss_scaling=on / off;
// "fp16_hysteresis_device" / "_host": with --precision_options=hysteresis=3,
// so the hysteresis tracker must cross the checkpoint too. fp32, tf32 and
// bf16 take the device path (the sync-free step; AdamW's step counters cross
// the checkpoint); "bf16_host" keeps bf16 on the host path.
// "bf16_sr" / "bf16_sr_sgd": bf16 with --stochastic_rounding (AdamW / SGD),
// so the rounding seed and the working copies must cross the checkpoint.
// "fp8" (delayed scaling with a history of 8 steps, so the interruption
// falls inside it) / "fp8_current": the FP8 scales and amax histories must
// cross the checkpoint, and every reported scale must match.
TEST_P(ResumeTest, ResumedRunMatchesUninterruptedRunBitForBit) {
  const std::string param = GetParam();
  const bool fp16 = param.rfind("fp16", 0) == 0;
  const bool bf16_host = param == "bf16_host";
  const bool stochastic = param.rfind("bf16_sr", 0) == 0;
  const bool fp8 = param.rfind("fp8", 0) == 0;
  TrainConfig c = TestConfig(fp16                      ? "fp16"
                             : (bf16_host || stochastic) ? "bf16"
                             : fp8                       ? "fp8"
                                                         : param);
  if (fp8) c.set_precision_options(param == "fp8" ? "history=8" : "recipe=current");
  if (bf16_host) c.set_device_loss_scaling("off");
  if (stochastic) {
    c.mutable_optimizer()->set_stochastic_rounding(true);
    if (param == "bf16_sr_sgd") c.mutable_optimizer()->set_name("sgd");
  }
  if (fp16) {
    c.set_device_loss_scaling(param.find("device") != std::string::npos ? "on" : "off");
    if (param.find("hysteresis") != std::string::npos) {
      c.set_precision_options("hysteresis=3");
    }
    // Overflows early on, and growth across the interruption.
    c.mutable_loss_scale()->set_init_scale(1 << 30);
    c.mutable_loss_scale()->set_growth_interval(5);
  }
  c.set_steps(40);
  c.set_grad_accum_steps(2);
  c.set_eval_every(0);
  PluginRegistry registry(InTreePluginDirs());

  RecordingSink full;
  {
    auto t = MakeTrainer(c, &registry);
    ASSERT_TRUE(t.ok()) << t.status();
    const absl::Status s = (*t)->Train(&full);
    ASSERT_TRUE(s.ok()) << s;
  }
  const std::string path = TempDir() + "/resume_" + GetParam() + ".ckpt";
  RecordingSink first, second;
  {
    auto t = MakeTrainer(c, &registry);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE((*t)->TrainUntil(17, &first).ok());
    ASSERT_TRUE((*t)->SaveCheckpoint(path).ok());
  }
  {
    auto t = MakeTrainer(c, &registry);
    ASSERT_TRUE(t.ok());
    absl::Status s = (*t)->RestoreCheckpoint(path);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ((*t)->step(), 17);
    ASSERT_TRUE((*t)->Train(&second).ok());
  }
  std::vector<double> resumed = Losses(first);
  for (double l : Losses(second)) resumed.push_back(l);
  const std::vector<double> expected = Losses(full);
  ASSERT_EQ(resumed.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    // Exact equality: the same bits, not merely close.
    EXPECT_EQ(resumed[i], expected[i]) << "step " << i + 1;
  }
  // The scale each step used, and which steps were skipped, too.
  std::vector<StepMetrics> steps = first.steps;
  steps.insert(steps.end(), second.steps.begin(), second.steps.end());
  int skipped = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(steps[i].loss_scale, full.steps[i].loss_scale) << "step " << i + 1;
    EXPECT_EQ(steps[i].skipped, full.steps[i].skipped) << "step " << i + 1;
    skipped += steps[i].skipped;
    ASSERT_EQ(steps[i].fp8_scales.size(), full.steps[i].fp8_scales.size()) << "step " << i + 1;
    for (size_t k = 0; k < steps[i].fp8_scales.size(); ++k) {
      EXPECT_EQ(steps[i].fp8_scales[k].name, full.steps[i].fp8_scales[k].name);
      EXPECT_EQ(steps[i].fp8_scales[k].scale, full.steps[i].fp8_scales[k].scale)
          << "step " << i + 1 << " " << steps[i].fp8_scales[k].name;
    }
  }
  if (fp8) {
    // Every Linear of the MLP reports its three tensors.
    EXPECT_GE(full.steps.back().fp8_scales.size(), 6u);
  }
  if (fp16) {
    EXPECT_GT(skipped, 1) << "the run should overflow early";
  }
}

INSTANTIATE_TEST_SUITE_P(AllPrecisions, ResumeTest,
                         ::testing::Values("fp32", "tf32", "bf16", "bf16_host", "bf16_sr",
                                           "bf16_sr_sgd", "fp16_device",
                                           "fp16_host", "fp16_hysteresis_device",
                                           "fp16_hysteresis_host", "fp8", "fp8_current"));

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(ResumeRefusalTest, CorruptTruncatedAndMismatchedCheckpointsAreRefused) {
  TrainConfig c = TestConfig("fp32");
  c.set_steps(5);
  PluginRegistry registry(InTreePluginDirs());
  auto t = MakeTrainer(c, &registry);
  ASSERT_TRUE(t.ok());
  const std::string good = TempDir() + "/good.ckpt";
  ASSERT_TRUE((*t)->TrainUntil(2, nullptr).ok());
  ASSERT_TRUE((*t)->SaveCheckpoint(good).ok());
  const std::string bytes = ReadFile(good);

  const std::string truncated = TempDir() + "/truncated.ckpt";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::string flipped_bytes = bytes;
  flipped_bytes[bytes.size() / 2] ^= 0x40;
  const std::string flipped = TempDir() + "/flipped.ckpt";
  std::ofstream(flipped, std::ios::binary) << flipped_bytes;

  for (const std::string& bad : {truncated, flipped, TempDir() + "/missing.ckpt"}) {
    absl::Status s = (*t)->RestoreCheckpoint(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s;
    EXPECT_EQ((*t)->step(), 2);  // nothing was restored
  }

  // Same file, other precision or model options: a clear mismatch.
  TrainConfig other = c;
  other.set_precision("bf16");
  auto t2 = MakeTrainer(other, &registry);
  ASSERT_TRUE(t2.ok());
  absl::Status s = (*t2)->RestoreCheckpoint(good);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("precision"), std::string::npos) << s;
  other = c;
  other.set_model_options("hidden=32");
  auto t3 = MakeTrainer(other, &registry);
  ASSERT_TRUE(t3.ok());
  s = (*t3)->RestoreCheckpoint(good);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(ReadFile(good), bytes);  // refusing never rewrites the file
}

}  // namespace
}  // namespace mnt::trainer

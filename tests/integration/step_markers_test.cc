// The trainer's step markers (ABI 1.7 Backend_StepBegin/StepEnd) on the CPU
// backend with record_steps=on, where each marked step is deferred,
// recorded, matched against the step before and the "captured" one, and
// issued from the recording (common/step_session.h: what the cuda backend
// does with CUDA graphs, minus the graph), against record_steps=off (the
// markers do nothing): the same losses and checkpoint bytes. The fp16 device
// loss-scaling path reads nothing inside a step, so with a constant rate
// every step after the second is a replay; the host paths read the loss
// inside the step and run as issued; gradient accumulation uploads inside
// the step and does too. A copy of a parameter bug into the replay path
// (a stale params byte, a lost op) would change the bits.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "tests/integration/trained_run.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using testing::TestConfig;
using testing::TrainAndCheckpoint;
using testing::TrainedRun;

TrainedRun Train(TrainConfig c, bool record, const std::string& tag) {
  c.set_backend_options(record ? "record_steps=on" : "record_steps=off");
  return TrainAndCheckpoint(c, "markers_" + tag + (record ? "_on" : "_off") + ".ckpt");
}

// precision ("fp16_device", "fp16_host", "fp32", "bf16"), optimizer,
// micro-batches per step.
class StepMarkersTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, int>> {};

TEST_P(StepMarkersTest, RecordedStepsGiveTheBitsOfStepsRunAsIssued) {
  const auto& [precision, optimizer, accum] = GetParam();
  const bool fp16 = precision.rfind("fp16", 0) == 0;
  TrainConfig c = TestConfig(fp16 ? "fp16" : precision);
  if (fp16) c.set_device_loss_scaling(precision == "fp16_device" ? "on" : "off");
  c.mutable_optimizer()->set_name(optimizer);
  c.mutable_schedule()->set_kind("constant");  // the same lr param every step
  c.mutable_schedule()->set_warmup_steps(0);
  c.mutable_schedule()->set_warmup_ratio(0);
  c.set_grad_accum_steps(accum);
  const int steps = 12;
  c.set_steps(steps);
  c.set_eval_every(5);  // evaluation between steps, outside the markers
  const std::string tag = precision + "_" + optimizer + "_" + std::to_string(accum);
  const TrainedRun on = Train(c, true, tag), off = Train(c, false, tag);
  ASSERT_EQ(on.losses.size(), static_cast<size_t>(steps));
  ASSERT_EQ(off.losses.size(), on.losses.size());
  for (size_t i = 0; i < on.losses.size(); ++i) {
    EXPECT_EQ(on.losses[i], off.losses[i]) << "step " << i + 1;
    EXPECT_TRUE(std::isfinite(on.losses[i]));
  }
  ASSERT_GT(on.checkpoint.tensors_size(), 0);
  ASSERT_EQ(on.checkpoint.tensors_size(), off.checkpoint.tensors_size());
  for (int i = 0; i < on.checkpoint.tensors_size(); ++i) {
    EXPECT_TRUE(on.checkpoint.tensors(i).data() == off.checkpoint.tensors(i).data())
        << "tensor " << i << " differs";
  }
  EXPECT_EQ(off.replayed_steps, 0);
  // Step 1 runs eagerly, step 2 equals it and is "captured", the rest replay
  // when nothing inside the step reads back or uploads. The host paths read
  // inside the step today (none replays); a sync-free host path may.
  if (precision == "fp16_device") {
    EXPECT_EQ(on.replayed_steps, accum == 1 ? steps - 2 : 0);
  } else {
    EXPECT_GE(on.replayed_steps, 0);
    EXPECT_LE(on.replayed_steps, steps - 2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Paths, StepMarkersTest,
    ::testing::Values(std::make_tuple("fp16_device", "adamw", 1),
                      std::make_tuple("fp16_device", "sgd", 1),
                      std::make_tuple("fp16_device", "adamw", 2),
                      std::make_tuple("fp16_host", "adamw", 1),
                      std::make_tuple("fp32", "adamw", 1),
                      std::make_tuple("bf16", "sgd", 1)));

}  // namespace
}  // namespace mnt::trainer

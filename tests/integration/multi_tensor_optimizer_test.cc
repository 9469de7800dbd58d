// --multi_tensor_optimizer=auto (one MULTI_ADAMW_STEP / MULTI_SGD_STEP per
// step, which the CPU backend supports; for adamw8bit, ABI 1.14, one
// MULTI_ADAMW8BIT_STEP over its 8-bit tensors and one MULTI_ADAMW_STEP over
// its small ones; for adafactor one MULTI_ADAFACTOR_STEP) against =off (one
// ADAMW_STEP / SGD_STEP / ADAMW8BIT_STEP / ADAFACTOR_STEP per parameter
// tensor): the same losses bit for bit, and the same
// checkpoint contents (master weights, optimizer state, step counters), in
// every precision, on the host and the device loss-scaling paths.
#include <string>
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

TrainedRun Train(TrainConfig c, const std::string& multi_tensor, const std::string& tag) {
  c.mutable_optimizer()->set_multi_tensor_optimizer(multi_tensor);
  return TrainAndCheckpoint(c, "multi_" + tag + "_" + multi_tensor + ".ckpt");
}

class MultiTensorOptimizerTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(MultiTensorOptimizerTest, SameBitsAsOneOpPerTensor) {
  const auto& [precision, optimizer] = GetParam();
  const bool fp16 = precision.rfind("fp16", 0) == 0;
  TrainConfig c = TestConfig(fp16 ? "fp16" : precision);
  if (fp16) {
    c.set_device_loss_scaling(precision == "fp16_device" ? "on" : "off");
    c.mutable_loss_scale()->set_init_scale(1 << 30);  // overflows: skipped steps
    c.mutable_loss_scale()->set_growth_interval(5);
  }
  c.mutable_optimizer()->set_name(optimizer);
  if (optimizer == "sgd") c.mutable_optimizer()->set_nesterov(true);
  c.set_steps(25);
  c.set_eval_every(0);
  const std::string tag = precision + "_" + optimizer;
  const TrainedRun multi = Train(c, "auto", tag), single = Train(c, "off", tag);
  ASSERT_EQ(multi.losses.size(), 25u);
  ASSERT_EQ(single.losses.size(), multi.losses.size());
  for (size_t i = 0; i < multi.losses.size(); ++i) {
    EXPECT_EQ(multi.losses[i], single.losses[i]) << "step " << i + 1;
  }
  // Master weights and optimizer state, tensor by tensor, the same bytes
  // (the metadata differs: it holds the config).
  ASSERT_GT(multi.checkpoint.tensors_size(), 0);
  ASSERT_EQ(multi.checkpoint.tensors_size(), single.checkpoint.tensors_size());
  for (int i = 0; i < multi.checkpoint.tensors_size(); ++i) {
    EXPECT_TRUE(multi.checkpoint.tensors(i).data() == single.checkpoint.tensors(i).data())
        << "tensor " << i << " differs";
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPrecisions, MultiTensorOptimizerTest,
    ::testing::Combine(::testing::Values("fp32", "bf16", "fp16_device", "fp16_host"),
                       ::testing::Values("adamw", "sgd", "adamw8bit", "adafactor")));

}  // namespace
}  // namespace mnt::trainer

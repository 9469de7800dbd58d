// The sync-free step (issue 15): under --device_loss_scaling=auto every
// precision keeps its step's scalars on the device (losses, the clip factor,
// AdamW's step count, the scale when it scales) and, with an ABI >= 1.7
// backend, takes the scheduled learning rate from a device scalar.
//  * fp32 and bf16 runs give the same logged losses, grad norms and final
//    checkpoint bits as the host path (--device_loss_scaling=off), with
//    clipping that bites, accumulation and a warmup + cosine schedule (a new
//    lr every step), for AdamW and SGD, one op per tensor and multi-tensor.
//  * Steps no sink asks for read nothing back (the trainer's device -> host
//    copies counted), in fp32, bf16 and fp16 with dynamic scaling; the host
//    path reads every step (so the count can fail).
//  * A backend built against ABI 1.6 keeps the host-float lr: it never sees
//    the 1.7 input, and the bits are the same. So does a 1.9 backend that
//    does not advertise MNT_CAPABILITY_OPTIMIZER_DEVICE_LR (capabilities
//    decide, not minors).
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/export.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using testing::InTreePluginDirs;
using testing::MakeTrainer;
using testing::RecordingSink;
using testing::TempDir;
using testing::TestConfig;

// A short run on which clipping bites and the lr changes every step.
TrainConfig SyncFreeConfig(const std::string& precision, const std::string& optimizer) {
  TrainConfig c = TestConfig(precision);
  c.set_steps(24);
  c.set_eval_every(0);
  c.set_grad_accum_steps(2);
  c.set_clip_grad_norm(0.05);
  c.mutable_schedule()->set_kind("cosine");
  c.mutable_schedule()->set_warmup_steps(5);
  c.mutable_optimizer()->set_name(optimizer);
  if (optimizer == "sgd") c.mutable_optimizer()->set_momentum(0.9);
  return c;
}

struct RunResult {
  std::vector<StepMetrics> steps;
  CheckpointData checkpoint;
  bool device_step_scalars = false;
};

RunResult Train(const TrainConfig& c, const std::string& tag, PluginRegistry* registry) {
  RunResult r;
  auto t = MakeTrainer(c, registry);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return r;
  r.device_step_scalars = (*t)->device_step_scalars();
  RecordingSink sink;
  const absl::Status s = (*t)->Train(&sink);
  EXPECT_TRUE(s.ok()) << s;
  r.steps = sink.steps;
  const std::string path = TempDir() + "/sync_free_" + tag + ".ckpt";
  EXPECT_TRUE((*t)->SaveCheckpoint(path).ok());
  auto data = ReadCheckpoint(path);
  EXPECT_TRUE(data.ok()) << data.status();
  if (data.ok()) r.checkpoint = *data;
  return r;
}

void ExpectSameRun(const RunResult& device, const RunResult& host) {
  ASSERT_EQ(device.steps.size(), host.steps.size());
  ASSERT_FALSE(host.steps.empty());
  int clipped = 0;
  for (size_t i = 0; i < host.steps.size(); ++i) {
    EXPECT_EQ(device.steps[i].loss, host.steps[i].loss) << "step " << i + 1;
    EXPECT_EQ(device.steps[i].grad_norm, host.steps[i].grad_norm) << "step " << i + 1;
    EXPECT_EQ(device.steps[i].lr, host.steps[i].lr) << "step " << i + 1;
    EXPECT_FALSE(device.steps[i].skipped);
    if (host.steps[i].grad_norm > 0.05) ++clipped;
  }
  EXPECT_GT(clipped, 0) << "clipping never bit: the test would not see its factor";
  EXPECT_EQ(device.checkpoint.metadata().at("applied_steps"),
            host.checkpoint.metadata().at("applied_steps"));
  ASSERT_GT(host.checkpoint.tensors_size(), 0);
  ASSERT_EQ(device.checkpoint.tensors_size(), host.checkpoint.tensors_size());
  for (int i = 0; i < host.checkpoint.tensors_size(); ++i) {
    EXPECT_TRUE(device.checkpoint.tensors(i).data() == host.checkpoint.tensors(i).data())
        << "tensor " << i << " differs";
  }
}

class SyncFreeStepTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, std::string>> {};

TEST_P(SyncFreeStepTest, SameBitsAsTheHostPath) {
  const auto& [precision, optimizer, multi_tensor] = GetParam();
  TrainConfig c = SyncFreeConfig(precision, optimizer);
  c.mutable_optimizer()->set_multi_tensor_optimizer(multi_tensor);
  const std::string tag = precision + "_" + optimizer + "_" + multi_tensor;
  PluginRegistry registry(InTreePluginDirs());
  c.set_device_loss_scaling("auto");
  const RunResult device = Train(c, tag + "_device", &registry);
  c.set_device_loss_scaling("off");
  const RunResult host = Train(c, tag + "_host", &registry);
  EXPECT_TRUE(device.device_step_scalars);
  EXPECT_FALSE(host.device_step_scalars);
  ExpectSameRun(device, host);
}

INSTANTIATE_TEST_SUITE_P(
    UnscaledPrecisions, SyncFreeStepTest,
    ::testing::Combine(::testing::Values("fp32", "bf16"), ::testing::Values("adamw", "sgd"),
                       ::testing::Values("auto", "off")));

// Reports every 5th step only.
class SparseSink : public RecordingSink {
 public:
  bool NeedsStepMetrics(int64_t step, int64_t) const override { return step % 5 == 0; }
};

TEST(SyncFreeStepReadsTest, NothingIsReadBackOnStepsNoSinkAsksFor) {
  PluginRegistry registry(InTreePluginDirs());
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    for (const char* mode : {"auto", "off"}) {
      SCOPED_TRACE(std::string(precision) + " --device_loss_scaling=" + mode);
      TrainConfig c = SyncFreeConfig(precision, "adamw");
      c.set_steps(20);
      c.set_device_loss_scaling(mode);
      auto t = MakeTrainer(c, &registry);
      ASSERT_TRUE(t.ok()) << t.status();
      SparseSink sink;
      ASSERT_TRUE((*t)->Train(&sink).ok());
      // The host path has every step's metrics on the host and hands them all
      // over; the device path reads and reports only the steps asked for.
      const bool device = std::string(mode) == "auto";
      ASSERT_EQ(sink.steps.size(), device ? 4u : 20u);
      for (const StepMetrics& m : sink.steps) {
        if (device) {
          EXPECT_EQ(m.step % 5, 0);
        }
        EXPECT_TRUE(std::isfinite(m.loss) && m.loss > 0) << m.loss;
        if (!m.skipped) {
          EXPECT_GT(m.grad_norm, 0);
        }
      }
      if (device) {
        EXPECT_TRUE((*t)->device_step_scalars());
        EXPECT_EQ((*t)->device_reads_on_unreported_steps(), 0);
      } else {
        // The host path reads each micro-batch's loss and the norm: 16
        // unreported steps x (2 losses + norm) at least.
        EXPECT_GE((*t)->device_reads_on_unreported_steps(), 16 * 3);
      }
    }
  }
}

// --- A backend that says it is 1.6: the CPU backend with its version set
// back, refusing (as a 1.6 backend's checks do) the 1.7 lr input. ---
MNT_Backend_Api g_backend_api_1_6;
MNT_Plugin_Api g_backend_plugin_1_6;
int g_optimizer_calls = 0, g_lr_inputs = 0;

MNT_Error* RunAs16(MNT_Backend_Run_Args* args) {
  size_t limit = 0;
  switch (args->op) {
    case MNT_OP_SGD_STEP: limit = 3; break;
    case MNT_OP_ADAMW_STEP: limit = 4; break;
    default: break;
  }
  if (limit > 0) {
    ++g_optimizer_calls;
    if (args->num_inputs > limit) ++g_lr_inputs;
  }
  return cpu::CpuBackendPluginApi()->backend->Backend_Run(args);
}

const MNT_Plugin_Api* CpuAs16() {
  g_backend_plugin_1_6 = *cpu::CpuBackendPluginApi();
  g_backend_plugin_1_6.abi_version.minor_version = 6;
  g_backend_plugin_1_6.name = "cpu16";
  g_backend_api_1_6 = *g_backend_plugin_1_6.backend;
  g_backend_api_1_6.Backend_Run = RunAs16;
  g_backend_plugin_1_6.backend = &g_backend_api_1_6;
  return &g_backend_plugin_1_6;
}

// --- A 1.9 backend that does not advertise the device lr: the same
// wrapper at this minor, its capabilities extension listing all but the
// 1.7 ones. It must be treated as the 1.6 one, whatever its minor. ---
const int32_t kWithout17[] = {MNT_CAPABILITY_ADAMW_STEP_COUNTER,
                              MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE,
                              MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER};
MNT_Capabilities_Extension g_capabilities_without_17 = sdk::MakeCapabilitiesExtension(kWithout17);
MNT_Plugin_Api g_backend_plugin_1_9;

const MNT_Plugin_Api* CpuAs19WithoutDeviceLr() {
  g_backend_plugin_1_9 = *CpuAs16();
  g_backend_plugin_1_9.abi_version.minor_version = MNT_ABI_MINOR;
  g_backend_plugin_1_9.name = "cpu19";
  g_backend_plugin_1_9.extension_start = &g_capabilities_without_17.header.base;
  return &g_backend_plugin_1_9;
}

void ExpectHostLrWithTheSameBits(const MNT_Plugin_Api* plugin) {
  PluginRegistry registry(InTreePluginDirs());
  ASSERT_TRUE(registry.RegisterStatic(plugin, std::string("static:") + plugin->name).ok());
  for (const char* optimizer : {"adamw", "sgd"}) {
    SCOPED_TRACE(optimizer);
    TrainConfig c = SyncFreeConfig("fp32", optimizer);
    c.mutable_optimizer()->set_multi_tensor_optimizer("off");
    const RunResult on_17 = Train(c, std::string(optimizer) + "_17", &registry);
    c.set_device(plugin->name);
    g_optimizer_calls = g_lr_inputs = 0;
    const RunResult on_16 = Train(c, std::string(optimizer) + "_" + plugin->name, &registry);
    EXPECT_TRUE(on_16.device_step_scalars) << "it has the 1.4 clip and counter ops";
    EXPECT_GT(g_optimizer_calls, 0);
    EXPECT_EQ(g_lr_inputs, 0) << plugin->name << " got the 1.7 lr input";
    ExpectSameRun(on_16, on_17);
  }
}

TEST(SyncFreeStepSkewTest, A16BackendKeepsTheHostLrWithTheSameBits) {
  ExpectHostLrWithTheSameBits(CpuAs16());
}

TEST(SyncFreeStepSkewTest, A19BackendWithoutTheCapabilityKeepsTheHostLr) {
  ExpectHostLrWithTheSameBits(CpuAs19WithoutDeviceLr());
}

}  // namespace
}  // namespace mnt::trainer

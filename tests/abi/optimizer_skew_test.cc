// ABI 1.7's stochastic rounding and device learning rate across versions.
// A backend built against 1.6 reads only a 1.6 caller's optimizer params and
// would round the working copy to nearest without saying so: the trainer
// refuses --stochastic_rounding on it with one line. Since 1.9 the trainer
// asks the backend's capabilities, not its minor: a 1.9 backend that does
// not advertise STOCHASTIC_ROUNDING or OPTIMIZER_DEVICE_LR is refused the
// one and never given the other, new minor or not. (The 1.7 backends' side,
// a 1.6 caller's shorter struct rounding to nearest, is in the CPU backend's
// stochastic_rounding_optimizers_test.)
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/op_list.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/optimizer.h"

namespace mnt {
namespace {

MNT_Plugin_Api g_backend_plugin_1_6;

const MNT_Plugin_Api* CpuAs16() {
  g_backend_plugin_1_6 = *cpu::CpuBackendPluginApi();
  g_backend_plugin_1_6.abi_version.minor_version = 6;
  return &g_backend_plugin_1_6;
}

// A 1.9 backend (the CPU backend's tables, this minor) whose capabilities
// extension lists all but the 1.7 ones.
const int32_t kWithout17[] = {MNT_CAPABILITY_ADAMW_STEP_COUNTER,
                              MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE,
                              MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER};
MNT_Capabilities_Extension g_capabilities_without_17 = sdk::MakeCapabilitiesExtension(kWithout17);
MNT_Plugin_Api g_backend_plugin_1_9;

const MNT_Plugin_Api* CpuAs19Without17() {
  g_backend_plugin_1_9 = *cpu::CpuBackendPluginApi();
  g_backend_plugin_1_9.abi_version.minor_version = MNT_ABI_MINOR;
  g_backend_plugin_1_9.extension_start = &g_capabilities_without_17.header.base;
  return &g_backend_plugin_1_9;
}

absl::Status Check(const MNT_Plugin_Api* plugin, bool stochastic, bool mixed, MNT_DType weights,
                   const char* precision) {
  std::unique_ptr<sdk::BackendInstance> backend;
  const sdk::Status s = sdk::BackendInstance::Create(plugin, "threads=1", &backend);
  EXPECT_TRUE(s.ok()) << s.message();
  mantissa::OptimizerConfig config;
  config.set_name("adamw");
  config.set_stochastic_rounding(stochastic);
  return trainer::Optimizer::CheckStochasticRounding(config, *backend, mixed, weights, precision);
}

TEST(OptimizerSkewTest, A16BackendIsRefusedForStochasticRounding) {
  EXPECT_EQ(Check(CpuAs16(), true, true, MNT_DTYPE_BF16, "bf16").message(),
            "--stochastic_rounding needs a backend that offers stochastic rounding (capability "
            "STOCHASTIC_ROUNDING, ABI 1.7); backend cpu (ABI 1.6) does not");
  // Round-to-nearest runs on it as before.
  EXPECT_TRUE(Check(CpuAs16(), false, true, MNT_DTYPE_BF16, "bf16").ok());
  EXPECT_TRUE(Check(cpu::CpuBackendPluginApi(), true, true, MNT_DTYPE_BF16, "bf16").ok());
}

TEST(OptimizerSkewTest, A19BackendIsAskedForItsCapabilitiesNotItsMinor) {
  const MNT_Plugin_Api* without = CpuAs19Without17();
  ASSERT_EQ(without->abi_version.minor_version, MNT_ABI_MINOR);
  ASSERT_GE(MNT_ABI_MINOR, 7);
  EXPECT_EQ(Check(without, true, true, MNT_DTYPE_BF16, "bf16").message(),
            "--stochastic_rounding needs a backend that offers stochastic rounding (capability "
            "STOCHASTIC_ROUNDING, ABI 1.7); backend cpu (ABI 1." +
                std::to_string(MNT_ABI_MINOR) + ") does not");
  EXPECT_TRUE(Check(without, false, true, MNT_DTYPE_BF16, "bf16").ok());

  // The device learning rate (the optimizer ops' 1.7 input) is not given to
  // it either; the CPU backend, which advertises both, gets both.
  std::unique_ptr<sdk::BackendInstance> b19, cpu, b16;
  ASSERT_TRUE(sdk::BackendInstance::Create(without, "threads=1", &b19).ok());
  ASSERT_TRUE(sdk::BackendInstance::Create(cpu::CpuBackendPluginApi(), "threads=1", &cpu).ok());
  ASSERT_TRUE(sdk::BackendInstance::Create(CpuAs16(), "threads=1", &b16).ok());
  EXPECT_FALSE(trainer::Optimizer::TakesDeviceLr(*b19));
  EXPECT_FALSE(trainer::Optimizer::TakesDeviceLr(*b16));
  EXPECT_TRUE(trainer::Optimizer::TakesDeviceLr(*cpu));
  // The multi-tensor ops are ops: GetOpSupport answers, not capabilities.
  mantissa::OptimizerConfig config;
  config.set_name("adamw");
  config.set_multi_tensor_optimizer("auto");
  EXPECT_TRUE(trainer::Optimizer::UsesMultiTensor(config, *b19));
}

// A backend without ABI 1.12's memory-light optimizer ops (the CPU
// backend's table, its op support hiding ADAMW8BIT_STEP and
// ADAFACTOR_STEP, as a 1.11 backend's would): --optimizer=adamw8bit and
// adafactor are refused in one line naming the op; the others run.
MNT_Backend_Api g_backend_api_without_112;
MNT_Plugin_Api g_backend_plugin_without_112;
MNT_Error* SupportWithout112(MNT_Backend_GetOpSupport_Args* args) {
  MNT_Error* e = cpu::CpuBackendPluginApi()->backend->Backend_GetOpSupport(args);
  if (e == nullptr &&
      (args->op == MNT_OP_ADAMW8BIT_STEP || args->op == MNT_OP_ADAFACTOR_STEP)) {
    args->supported = 0;
  }
  return e;
}
const MNT_Plugin_Api* CpuAs111() {
  g_backend_api_without_112 = *cpu::CpuBackendPluginApi()->backend;
  g_backend_api_without_112.Backend_GetOpSupport = SupportWithout112;
  g_backend_plugin_without_112 = *cpu::CpuBackendPluginApi();
  g_backend_plugin_without_112.abi_version.minor_version = 11;
  g_backend_plugin_without_112.backend = &g_backend_api_without_112;
  return &g_backend_plugin_without_112;
}

TEST(OptimizerSkewTest, ABackendWithoutTheMemoryLightOpsIsRefusedThem) {
  std::unique_ptr<sdk::BackendInstance> old, cpu;
  ASSERT_TRUE(sdk::BackendInstance::Create(CpuAs111(), "threads=1", &old).ok());
  ASSERT_TRUE(sdk::BackendInstance::Create(cpu::CpuBackendPluginApi(), "threads=1", &cpu).ok());
  mantissa::OptimizerConfig config;
  config.set_name("adamw8bit");
  EXPECT_EQ(trainer::Optimizer::CheckBackend(config, *old).message(),
            "--optimizer=adamw8bit needs the backend op ADAMW8BIT_STEP (ABI 1.12); backend cpu "
            "(ABI 1.11) does not support it; use --optimizer=adamw");
  EXPECT_TRUE(trainer::Optimizer::CheckBackend(config, *cpu).ok());
  config.set_name("adafactor");
  EXPECT_EQ(trainer::Optimizer::CheckBackend(config, *old).message(),
            "--optimizer=adafactor needs the backend op ADAFACTOR_STEP (ABI 1.12); backend cpu "
            "(ABI 1.11) does not support it; use --optimizer=adamw");
  EXPECT_TRUE(trainer::Optimizer::CheckBackend(config, *cpu).ok());
  config.set_name("adamw");
  EXPECT_TRUE(trainer::Optimizer::CheckBackend(config, *old).ok());
}

// A backend without ABI 1.14's multi-tensor forms of the memory-light
// optimizers (the CPU backend's table, its op support hiding one of them,
// as a 1.13 backend's would hide both): adamw8bit and adafactor step one op
// per tensor, as before; with their ops (and MULTI_ADAMW_STEP for
// adamw8bit's small tensors) one op per table, unless
// --multi_tensor_optimizer=off.
MNT_Op g_hidden_op = MNT_OP_INVALID;
MNT_Backend_Api g_backend_api_hiding;
MNT_Plugin_Api g_backend_plugin_hiding;
MNT_Error* SupportHiding(MNT_Backend_GetOpSupport_Args* args) {
  MNT_Error* e = cpu::CpuBackendPluginApi()->backend->Backend_GetOpSupport(args);
  if (e == nullptr && args->op == g_hidden_op) args->supported = 0;
  return e;
}
const MNT_Plugin_Api* CpuHiding(MNT_Op op) {
  g_hidden_op = op;
  g_backend_api_hiding = *cpu::CpuBackendPluginApi()->backend;
  g_backend_api_hiding.Backend_GetOpSupport = SupportHiding;
  g_backend_plugin_hiding = *cpu::CpuBackendPluginApi();
  g_backend_plugin_hiding.abi_version.minor_version = 13;
  g_backend_plugin_hiding.backend = &g_backend_api_hiding;
  return &g_backend_plugin_hiding;
}

TEST(OptimizerSkewTest, MemoryLightOptimizersUseTheMultiTensorOpsWhereSupported) {
  mantissa::OptimizerConfig config;
  config.set_name("adamw8bit");
  config.set_multi_tensor_optimizer("auto");
  std::unique_ptr<sdk::BackendInstance> cpu;
  ASSERT_TRUE(sdk::BackendInstance::Create(cpu::CpuBackendPluginApi(), "threads=1", &cpu).ok());
  EXPECT_TRUE(trainer::Optimizer::UsesMultiTensor(config, *cpu));
  for (MNT_Op hidden : {MNT_OP_MULTI_ADAMW8BIT_STEP, MNT_OP_MULTI_ADAMW_STEP}) {
    SCOPED_TRACE(sdk::OpName(hidden));
    std::unique_ptr<sdk::BackendInstance> old;
    ASSERT_TRUE(sdk::BackendInstance::Create(CpuHiding(hidden), "threads=1", &old).ok());
    EXPECT_TRUE(trainer::Optimizer::CheckBackend(config, *old).ok());
    EXPECT_FALSE(trainer::Optimizer::UsesMultiTensor(config, *old));
  }
  config.set_multi_tensor_optimizer("off");
  EXPECT_FALSE(trainer::Optimizer::UsesMultiTensor(config, *cpu));
  config.set_name("adafactor");
  config.set_multi_tensor_optimizer("auto");
  EXPECT_TRUE(trainer::Optimizer::UsesMultiTensor(config, *cpu));
  std::unique_ptr<sdk::BackendInstance> old;
  ASSERT_TRUE(
      sdk::BackendInstance::Create(CpuHiding(MNT_OP_MULTI_ADAFACTOR_STEP), "threads=1", &old).ok());
  EXPECT_TRUE(trainer::Optimizer::CheckBackend(config, *old).ok());
  EXPECT_FALSE(trainer::Optimizer::UsesMultiTensor(config, *old));
}

TEST(OptimizerSkewTest, OnlyBf16WorkingWeightsAreRoundedStochastically) {
  const MNT_Plugin_Api* cpu = cpu::CpuBackendPluginApi();
  EXPECT_EQ(Check(cpu, true, true, MNT_DTYPE_F16, "fp16").message(),
            "--stochastic_rounding needs bf16 working weights written from fp32 masters "
            "(--precision=bf16); precision fp16 keeps f16 weights");
  EXPECT_EQ(Check(cpu, true, false, MNT_DTYPE_F32, "tf32").message(),
            "--stochastic_rounding needs bf16 working weights written from fp32 masters "
            "(--precision=bf16); precision tf32 keeps f32 weights without a master copy");
  EXPECT_TRUE(Check(cpu, false, false, MNT_DTYPE_F32, "fp32").ok());
}

}  // namespace
}  // namespace mnt

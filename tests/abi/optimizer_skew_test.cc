// ABI 1.7's stochastic rounding across versions. A backend built against
// 1.6 reads only a 1.6 caller's optimizer params and would round the
// working copy to nearest without saying so: the trainer refuses
// --stochastic_rounding on it with one line. (The 1.7 backends' side, a 1.6
// caller's shorter struct rounding to nearest, is in the CPU backend's
// stochastic_rounding_optimizers_test.)
#include <memory>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_instance.h"
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
            "--stochastic_rounding needs a backend built against ABI >= 1.7; backend cpu has "
            "1.6");
  // Round-to-nearest runs on it as before.
  EXPECT_TRUE(Check(CpuAs16(), false, true, MNT_DTYPE_BF16, "bf16").ok());
  EXPECT_TRUE(Check(cpu::CpuBackendPluginApi(), true, true, MNT_DTYPE_BF16, "bf16").ok());
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

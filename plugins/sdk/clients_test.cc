// The SDK's host-side clients against real in-tree plugins: errors keep
// their code and message and are freed once, the loss scaler client drives
// the fp16 plugin's GradScaler state machine, the precision client reads the
// policy, and a backend instance creates, answers and destroys.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/precisions/precision_plugins.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/loss_scaler_client.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/precision_client.h"

namespace mnt::sdk {
namespace {

// A plugin table whose errors carry any code; counts Error_Destroy calls.
int destroyed = 0;
// Kept as the raw int32 a foreign plugin may return: holding -3 in an
// MNT_ErrorCode variable would itself be undefined (UBSan's enum check).
int32_t fake_code = MNT_ERROR_OK;
const char* fake_message = nullptr;
void FakeDestroy(MNT_Error*) { ++destroyed; }
const char* FakeMessage(const MNT_Error*) { return fake_message; }
MNT_ErrorCode FakeCode(const MNT_Error*) { return static_cast<MNT_ErrorCode>(fake_code); }

MNT_Plugin_Api FakePlugin() {
  MNT_Plugin_Api p{};
  p.Error_Destroy = FakeDestroy;
  p.Error_Message = FakeMessage;
  p.Error_GetCode = FakeCode;
  return p;
}

TEST(PluginErrorTest, KeepsCodeAndMessageAndFreesOnce) {
  const MNT_Plugin_Api plugin = FakePlugin();
  MNT_Error* some_error = reinterpret_cast<MNT_Error*>(&destroyed);
  destroyed = 0;
  EXPECT_TRUE(StatusFromPluginError(&plugin, nullptr).ok());
  EXPECT_EQ(destroyed, 0);

  fake_code = MNT_ERROR_RESOURCE_EXHAUSTED;
  fake_message = "out of device memory";
  Status s = StatusFromPluginError(&plugin, some_error);
  EXPECT_EQ(s.code(), MNT_ERROR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.message(), "out of device memory");
  EXPECT_EQ(destroyed, 1);
}

TEST(PluginErrorTest, AnErrorObjectIsAFailureWhateverCodeItClaims) {
  const MNT_Plugin_Api plugin = FakePlugin();
  MNT_Error* some_error = reinterpret_cast<MNT_Error*>(&destroyed);
  destroyed = 0;
  for (int32_t code : {int32_t{MNT_ERROR_OK}, int32_t{-3}, int32_t{99}}) {
    fake_code = code;
    fake_message = nullptr;
    Status s = StatusFromPluginError(&plugin, some_error);
    EXPECT_FALSE(s.ok()) << "code " << code;
    EXPECT_EQ(s.code(), MNT_ERROR_UNKNOWN);
    EXPECT_EQ(s.message(), "(no message)");
  }
  EXPECT_EQ(destroyed, 3);
}

// GradScaler.update(), written out independently of the plugin: the scale
// after each step of `found_inf`.
std::vector<float> GradScalerScales(float scale, int interval,
                                    const std::vector<bool>& found_inf) {
  std::vector<float> out;
  int tracker = 0;
  for (bool inf : found_inf) {
    if (inf) {
      scale *= 0.5f;
      tracker = 0;
    } else if (++tracker == interval) {
      scale *= 2.0f;
      tracker = 0;
    }
    out.push_back(scale);
  }
  return out;
}

TEST(LossScalerClientTest, DrivesTheFp16ScalerLikeGradScaler) {
  const uint32_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  const int interval = 2 + static_cast<int>(rng() % 5);
  const float init = std::ldexp(1.0f, 4 + static_cast<int>(rng() % 20));
  std::vector<bool> found_inf(40);
  for (size_t i = 0; i < found_inf.size(); ++i) found_inf[i] = rng() % 4 == 0;

  LossScalerClient scaler;
  const std::string options = "mode=dynamic,init_scale=" + std::to_string(init) +
                              ",growth_interval=" + std::to_string(interval);
  ASSERT_TRUE(
      LossScalerClient::Create(precision::Fp16PluginApi(), options, &scaler).ok());
  MNT_LossScalerState st{};
  ASSERT_TRUE(scaler.GetState(&st).ok());
  EXPECT_EQ(st.scale, init);

  const std::vector<float> want = GradScalerScales(init, interval, found_inf);
  int64_t skipped = 0;
  for (size_t i = 0; i < found_inf.size(); ++i) {
    LossScalerUpdate u;
    u.skip_step = -1;  // the plugin must overwrite it
    ASSERT_TRUE(scaler.Update(found_inf[i], &u).ok());
    EXPECT_EQ(u.skip_step, found_inf[i] ? 1 : 0) << "step " << i;
    EXPECT_EQ(u.new_scale, want[i]) << "step " << i;
    skipped += found_inf[i];
  }
  ASSERT_TRUE(scaler.GetState(&st).ok());
  EXPECT_EQ(st.skipped_steps, skipped);

  // A state written back reads back; the scaler moves with its owner.
  MNT_LossScalerState restored{};
  restored.scale = 256.0f;
  restored.growth_tracker = 1;
  restored.skipped_steps = 7;
  ASSERT_TRUE(scaler.SetState(restored).ok());
  LossScalerClient moved = std::move(scaler);
  EXPECT_TRUE(scaler.empty());
  ASSERT_TRUE(moved.GetState(&st).ok());
  EXPECT_EQ(st.scale, 256.0f);
  EXPECT_EQ(st.growth_tracker, 1);
  EXPECT_EQ(st.skipped_steps, 7);
  restored.scale = NAN;
  EXPECT_FALSE(moved.SetState(restored).ok());
}

TEST(LossScalerClientTest, BadOptionsAreOneLineAndLeaveNoScaler) {
  LossScalerClient scaler;
  Status s = LossScalerClient::Create(precision::Fp16PluginApi(),
                                      "no_such_option=1", &scaler);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  EXPECT_TRUE(scaler.empty());
}

TEST(PrecisionClientTest, ReadsPolicyOpClassesAndPlan) {
  PrecisionClient fp16(precision::Fp16PluginApi());
  MNT_Precision_GetPolicy_Args policy;
  ASSERT_TRUE(fp16.GetPolicy(&policy).ok());
  EXPECT_EQ(policy.weight_dtype, MNT_DTYPE_F16);
  EXPECT_EQ(policy.master_weight_dtype, MNT_DTYPE_F32);
  EXPECT_EQ(policy.loss_scaling, MNT_LOSS_SCALING_DYNAMIC);
  MNT_Precision_GetOpClassPolicy_Args matmul;
  ASSERT_TRUE(fp16.GetOpClassPolicy(MNT_OP_CLASS_MATMUL, &matmul).ok());
  EXPECT_EQ(matmul.compute_mode, policy.matmul_compute);
  EXPECT_EQ(matmul.accumulate_dtype, MNT_DTYPE_F32);
  EXPECT_FALSE(fp16.GetOpClassPolicy(static_cast<MNT_OpClass>(999), &matmul).ok());
  MNT_Precision_GetMemoryPlan_Args plan;
  ASSERT_TRUE(fp16.GetMemoryPlan(2, &plan).ok());
  EXPECT_EQ(plan.bytes_weights, 2);
  EXPECT_EQ(plan.bytes_master_weights, 4);
  EXPECT_EQ(plan.bytes_optimizer_state, 8);
  ASSERT_TRUE(fp16.GetMemoryPlan(1, &plan).ok());
  EXPECT_EQ(plan.bytes_optimizer_state, 4);
}

TEST(BackendInstanceTest, CreatesAnswersAndRoundTripsMemory) {
  std::unique_ptr<BackendInstance> cpu;
  ASSERT_TRUE(BackendInstance::Create(cpu::CpuBackendPluginApi(), "", &cpu).ok());
  MNT_Backend_GetInfo_Args info;
  ASSERT_TRUE(cpu->GetInfo(&info).ok());
  ASSERT_NE(info.device_name, nullptr);
  EXPECT_NE(std::string(info.device_name), "");
  EXPECT_EQ(info.host_addressable, 1);
  EXPECT_TRUE(cpu->Supports(MNT_OP_FILL));
  EXPECT_FALSE(cpu->Supports(static_cast<MNT_Op>(9999)));

  const uint32_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  std::vector<float> host(1 + rng() % 300), back(host.size());
  for (float& v : host) v = std::uniform_real_distribution<float>(-4, 4)(rng);
  {
    DeviceBuffer buf;
    const size_t bytes = host.size() * sizeof(float);
    ASSERT_TRUE(cpu->client().Allocate(bytes, MNT_MEMORY_DATA, &buf).ok());
    ASSERT_TRUE(cpu->client().ToDevice(buf.data(), host.data(), bytes).ok());
    ASSERT_TRUE(cpu->client().ToHost(back.data(), buf.data(), bytes).ok());
  }
  EXPECT_EQ(back, host);

  std::unique_ptr<BackendInstance> bad;
  Status s = BackendInstance::Create(cpu::CpuBackendPluginApi(),
                                     "no_such_option=1", &bad);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(bad, nullptr);
}

}  // namespace
}  // namespace mnt::sdk

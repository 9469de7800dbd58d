// An error returned by a backend mid-step reaches the host with its code and
// message, through sdk::BackendClient and through StatusFromPluginError, and
// every error object is handed back to the plugin's Error_Destroy.
#include "tests/abi/flaky_backend.h"

#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::abi_test {
namespace {

using ::mnt::trainer::PluginRegistry;
using ::mnt::trainer::StatusFromPluginError;

// Creates a backend instance of `plugin` with `options`.
absl::Status Create(const MNT_Plugin_Api* plugin, const char* options,
                    MNT_Backend** backend) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  a.options = options;
  absl::Status s =
      StatusFromPluginError(plugin, plugin->backend->Backend_Create(&a));
  *backend = a.backend;
  return s;
}

void Destroy(const MNT_Plugin_Api* plugin, MNT_Backend* backend) {
  MNT_Backend_Destroy_Args a{};
  a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  a.backend = backend;
  EXPECT_TRUE(
      StatusFromPluginError(plugin, plugin->backend->Backend_Destroy(&a)).ok());
}

// One FILL of `t` with `value`, called through the raw C table.
MNT_Error* RawFill(const MNT_Plugin_Api* plugin, MNT_Backend* backend,
                   const MNT_Tensor& t, double value) {
  MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, value};
  MNT_Backend_Run_Args a{};
  a.struct_size = MNT_Backend_Run_Args_STRUCT_SIZE;
  a.backend = backend;
  a.op = MNT_OP_FILL;
  a.outputs = &t;
  a.num_outputs = 1;
  a.params = &fill;
  return plugin->backend->Backend_Run(&a);
}

class FlakyBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.RegisterStatic(FlakyBackendPluginApi(),
                                         "static:flaky").ok());
    plugin_ = FlakyBackendPluginApi();
  }
  PluginRegistry registry_{{}};
  const MNT_Plugin_Api* plugin_ = nullptr;
};

TEST_F(FlakyBackendTest, ForwardsToTheCpuBackendUntilTheInjectedFailure) {
  MNT_Backend* backend = nullptr;
  ASSERT_TRUE(Create(plugin_, "fail_after=3", &backend).ok());
  {
    sdk::BackendClient client(plugin_, backend);
    const uint32_t seed = std::random_device{}();
    std::cout << "seed " << seed << "\n";
    std::mt19937 rng(seed);
    const int64_t n = 16 + rng() % 64;
    const float value = std::uniform_real_distribution<float>(-8, 8)(rng);
    sdk::DeviceBuffer buf;
    ASSERT_TRUE(client.Allocate(n * sizeof(float), MNT_MEMORY_DATA, &buf).ok());
    const MNT_Tensor t = sdk::MakeTensor(buf.data(), MNT_DTYPE_F32, {n});

    // Calls 1 and 2 are real CPU-backend work.
    MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, value};
    sdk::Status s = client.Run(MNT_OP_FILL, {}, {t}, &fill);
    ASSERT_TRUE(s.ok()) << s.message();
    MNT_AddParams twice{MNT_AddParams_STRUCT_SIZE, 2.0f, 0.0f};
    s = client.Run(MNT_OP_ADD, {t}, {t}, &twice);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<float> host(n);
    ASSERT_TRUE(client.ToHost(host.data(), buf.data(), n * sizeof(float)).ok());
    for (float v : host) {
      ASSERT_TRUE(std::isfinite(v));
      ASSERT_EQ(v, 2.0f * value);  // exact: doubling is exact in fp32
    }

    // Call 3 fails, through the SDK client ...
    s = client.Run(MNT_OP_FILL, {}, {t}, &fill);
    EXPECT_EQ(s.code(), MNT_ERROR_INTERNAL);
    EXPECT_EQ(s.message(),
              "flaky backend: injected failure in Backend_Run call 3");
    EXPECT_EQ(FlakyLiveErrorCount(), 0) << "BackendClient leaked the error";

    // ... and call 4 through the trainer's StatusFromPluginError.
    MNT_Error* error = RawFill(plugin_, backend, t, 1.0);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(FlakyLiveErrorCount(), 1);
    absl::Status status = StatusFromPluginError(plugin_, error);
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
    EXPECT_EQ(status.message(),
              "flaky backend: injected failure in Backend_Run call 4");
    EXPECT_EQ(FlakyLiveErrorCount(), 0) << "StatusFromPluginError leaked";
    // The failure left the earlier result alone.
    ASSERT_TRUE(client.ToHost(host.data(), buf.data(), n * sizeof(float)).ok());
    EXPECT_EQ(host[0], 2.0f * value);
  }
  Destroy(plugin_, backend);
}

TEST_F(FlakyBackendTest, ErrorsOfTheCpuBackendAreForwardedAndFreed) {
  MNT_Backend* backend = nullptr;
  ASSERT_TRUE(Create(plugin_, "", &backend).ok());
  const MNT_Tensor bad = sdk::MakeTensor(nullptr, MNT_DTYPE_INVALID, {4});
  MNT_Error* error = RawFill(plugin_, backend, bad, 1.0);
  ASSERT_NE(error, nullptr);
  absl::Status status = StatusFromPluginError(plugin_, error);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("FILL"));
  EXPECT_EQ(FlakyLiveErrorCount(), 0);
  Destroy(plugin_, backend);
}

TEST_F(FlakyBackendTest, RejectsABadFailAfter) {
  MNT_Backend* backend = nullptr;
  absl::Status s = Create(plugin_, "fail_after=soon", &backend);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "flaky backend options: fail_after='soon' is not an integer >= 0");
  EXPECT_EQ(FlakyLiveErrorCount(), 0);
  s = Create(plugin_, "fail_after=2,no_such_key=1", &backend);
  EXPECT_FALSE(s.ok()) << "the CPU backend must refuse unknown keys";
  EXPECT_EQ(FlakyLiveErrorCount(), 0);
}

TEST(FlakySharedObjectTest, LoadsFromRunfilesAndFailsOnTheNthRun) {
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", ""));
  auto plugin = registry.Get(MNT_PLUGIN_KIND_BACKEND, "flaky");
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_NE((*plugin)->handle, nullptr) << "expected the .so, not a static";
  const MNT_Plugin_Api* api = (*plugin)->api;
  MNT_Backend* backend = nullptr;
  ASSERT_TRUE(Create(api, "fail_after=2", &backend).ok());
  {
    sdk::BackendClient client(api, backend);
    sdk::DeviceBuffer buf;
    ASSERT_TRUE(client.Allocate(4 * sizeof(float), MNT_MEMORY_DATA, &buf).ok());
    const MNT_Tensor t = sdk::MakeTensor(buf.data(), MNT_DTYPE_F32, {4});
    MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 3.0};
    EXPECT_TRUE(client.Run(MNT_OP_FILL, {}, {t}, &fill).ok());
    absl::Status s =
        StatusFromPluginError(api, RawFill(api, backend, t, 3.0));
    EXPECT_EQ(s.message(),
              "flaky backend: injected failure in Backend_Run call 2");
  }
  Destroy(api, backend);
}

}  // namespace
}  // namespace mnt::abi_test

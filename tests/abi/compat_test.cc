// ABI compatibility of the plugin loader against real shared objects:
// a backend built against the frozen 1.0 headers loads and works in the
// current host, and every broken plugin is refused with one line naming the
// file and the reason.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The runfiles path of a file in this package.
std::string TestFile(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir != nullptr ? srcdir : ".") + "/" +
         (workspace != nullptr ? workspace : "mantissa") + "/tests/abi/" +
         name;
}

class CompatTest : public ::testing::Test {
 protected:
  // Loads `file` from this package and returns the refusal ("" if loaded).
  std::string LoadRefusal(const std::string& file) {
    absl::Status s = registry_.LoadFile(TestFile(file));
    EXPECT_EQ(s.message().find('\n'), absl::string_view::npos)
        << "not one line: " << s;
    return std::string(s.message());
  }

  PluginRegistry registry_{PluginRegistry::DefaultSearchPath("", "")};
};

// ---------------------------------------------------------------------------
// An ABI 1.0 backend in the current host.
// ---------------------------------------------------------------------------

TEST_F(CompatTest, V10BackendIsFoundOnTheRunfilesSearchPath) {
  auto plugin = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "v1_0");
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_THAT((*plugin)->origin, HasSubstr("tests/abi/mnt_backend_v1_0.so"));
  EXPECT_NE((*plugin)->handle, nullptr);
  const MNT_Plugin_Api* api = (*plugin)->api;
  EXPECT_EQ(api->abi_version.major_version, 1);
  EXPECT_EQ(api->abi_version.minor_version, 0);
  EXPECT_EQ(api->backend->struct_size, MNT_Backend_Api_STRUCT_SIZE_1_0);
  // The bytes after its 1.0 struct are non-NULL poison: reading them would
  // make it look as if it had events.
  EXPECT_FALSE(HasEvents(api));
}

TEST_F(CompatTest, V10BackendAllocatesRunsAndReadsBack) {
  auto plugin = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "v1_0");
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  const MNT_Plugin_Api* api = (*plugin)->api;

  MNT_Backend_Create_Args create{};
  create.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  ASSERT_TRUE(StatusFromPluginError(api, api->backend->Backend_Create(&create))
                  .ok());
  {
    sdk::BackendClient client(api, create.backend);
    const uint32_t seed = std::random_device{}();
    std::cout << "seed " << seed << "\n";
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
    const int64_t n = 1000 + static_cast<int64_t>(rng() % 1000);
    std::vector<float> x(n), y(n);
    for (float& v : x) v = uniform(rng);
    for (float& v : y) v = uniform(rng);
    const float alpha = uniform(rng), beta = uniform(rng);

    const size_t bytes = n * sizeof(float);
    sdk::DeviceBuffer dx, dy, dout, dsum;
    ASSERT_TRUE(client.Allocate(bytes, MNT_MEMORY_DATA, &dx).ok());
    ASSERT_TRUE(client.Allocate(bytes, MNT_MEMORY_DATA, &dy).ok());
    ASSERT_TRUE(client.Allocate(bytes, MNT_MEMORY_ACTIVATIONS, &dout).ok());
    ASSERT_TRUE(client.Allocate(sizeof(float), MNT_MEMORY_WORKSPACE, &dsum)
                    .ok());
    int64_t current = 0, peak = 0;
    ASSERT_TRUE(client.GetStats(MNT_MEMORY_DATA, &current, &peak).ok());
    EXPECT_EQ(current, static_cast<int64_t>(2 * bytes));
    ASSERT_TRUE(client.ToDevice(dx.data(), x.data(), bytes).ok());
    ASSERT_TRUE(client.ToDevice(dy.data(), y.data(), bytes).ok());

    const MNT_Tensor tx = sdk::MakeTensor(dx.data(), MNT_DTYPE_F32, {n});
    const MNT_Tensor ty = sdk::MakeTensor(dy.data(), MNT_DTYPE_F32, {n});
    const MNT_Tensor tout = sdk::MakeTensor(dout.data(), MNT_DTYPE_F32, {n});
    const MNT_Tensor tsum = sdk::MakeTensor(dsum.data(), MNT_DTYPE_F32, {1});

    // FILL, then ADD over the filled buffer: out = alpha * x + beta * y.
    MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 7.0};
    ASSERT_TRUE(client.Run(MNT_OP_FILL, {}, {tout}, &fill).ok());
    std::vector<float> filled(n);
    ASSERT_TRUE(client.ToHost(filled.data(), dout.data(), bytes).ok());
    for (float v : filled) ASSERT_EQ(v, 7.0f);

    MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, alpha, beta};
    sdk::Status s = client.Run(MNT_OP_ADD, {tx, ty}, {tout}, &add);
    ASSERT_TRUE(s.ok()) << s.message();
    MNT_ReduceParams sum{MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_SUM};
    s = client.Run(MNT_OP_REDUCE, {tout}, {tsum}, &sum);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(client.Synchronize().ok());

    std::vector<float> out(n);
    float total = 0;
    ASSERT_TRUE(client.ToHost(out.data(), dout.data(), bytes).ok());
    ASSERT_TRUE(client.ToHost(&total, dsum.data(), sizeof(float)).ok());
    // fp32 arithmetic against a float64 reference: a few roundings of terms
    // of size |alpha x| + |beta y|.
    double reference_total = 0, magnitude_total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = double{alpha} * x[i] + double{beta} * y[i];
      const double scale = std::abs(double{alpha} * x[i]) +
                           std::abs(double{beta} * y[i]);
      ASSERT_TRUE(std::isfinite(out[i])) << i;
      ASSERT_NEAR(out[i], want, 1e-6 * scale + 1e-30) << "element " << i;
      reference_total += out[i];  // the sum of what the backend produced
      magnitude_total += std::abs(out[i]);
    }
    ASSERT_TRUE(std::isfinite(total));
    EXPECT_NEAR(total, reference_total, 1e-6 * magnitude_total);

    // A 1.0 backend reports unknown ops clearly instead of crashing.
    s = client.Run(MNT_OP_GEMM, {tx, ty}, {tout});
    EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED);
    EXPECT_EQ(s.message(), "v1_0 backend: op 3 is not implemented");
  }  // buffers freed before the instance
  MNT_Backend_Destroy_Args destroy{};
  destroy.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  destroy.backend = create.backend;
  EXPECT_TRUE(
      StatusFromPluginError(api, api->backend->Backend_Destroy(&destroy)).ok());
}

// ---------------------------------------------------------------------------
// Refusals: each one line, naming the file and the reason.
// ---------------------------------------------------------------------------

TEST_F(CompatTest, RefusesAnotherMajorVersion) {
  EXPECT_EQ(LoadRefusal("mnt_backend_major2.so"),
            TestFile("mnt_backend_major2.so") +
                ": plugin built against ABI 2.0, incompatible with this "
                "trainer's 1." + std::to_string(MNT_ABI_MINOR) +
                " (major versions differ); rebuild the plugin against ABI 1.x");
}

TEST_F(CompatTest, RefusesANewerMinorVersion) {
  EXPECT_EQ(LoadRefusal("mnt_backend_minor_newer.so"),
            TestFile("mnt_backend_minor_newer.so") +
                ": plugin built against ABI 1." + std::to_string(MNT_ABI_MINOR + 4) +
                ", newer than this trainer's 1." + std::to_string(MNT_ABI_MINOR) +
                "; upgrade the trainer");
}

TEST_F(CompatTest, RefusesATruncatedPluginApi) {
  EXPECT_EQ(LoadRefusal("mnt_backend_truncated.so"),
            TestFile("mnt_backend_truncated.so") +
                ": MNT_Plugin_Api struct_size 16 is smaller than the 120 "
                "bytes of ABI 1.0");
}

TEST_F(CompatTest, RefusesASharedObjectWithoutTheEntrySymbol) {
  EXPECT_EQ(LoadRefusal("mnt_backend_nosymbol.so"),
            TestFile("mnt_backend_nosymbol.so") +
                ": not a Mantissa plugin: it does not export MNT_GetPluginApi");
}

TEST_F(CompatTest, RefusesAFileThatIsNotASharedObject) {
  const std::string path = TestFile("testdata/mnt_backend_garbage.so");
  absl::Status s = registry_.LoadFile(path);
  EXPECT_THAT(std::string(s.message()),
              StartsWith(path + ": not a loadable plugin file: "));
  EXPECT_EQ(s.message().find('\n'), absl::string_view::npos);
}

TEST_F(CompatTest, RefusesANullRequiredFunction) {
  EXPECT_EQ(LoadRefusal("mnt_backend_null_run.so"),
            TestFile("mnt_backend_null_run.so") +
                ": required function MNT_Backend_Api.Backend_Run is NULL");
}

TEST_F(CompatTest, RefusesADuplicateName) {
  ASSERT_EQ(LoadRefusal("mnt_backend_dup_a.so"), "");
  EXPECT_EQ(LoadRefusal("mnt_backend_dup_b.so"),
            "duplicate backend plugin 'dup': " +
                TestFile("mnt_backend_dup_a.so") + " and " +
                TestFile("mnt_backend_dup_b.so"));
  // The same file again is not a duplicate.
  EXPECT_EQ(LoadRefusal("mnt_backend_dup_a.so"), "");
  auto dup = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "dup");
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ((*dup)->origin, TestFile("mnt_backend_dup_a.so"));
}

TEST_F(CompatTest, RefusesAPluginWhoseInitializeFails) {
  EXPECT_EQ(LoadRefusal("mnt_backend_init_fails.so"),
            TestFile("mnt_backend_init_fails.so") +
                ": Plugin_Initialize failed: bad backend: simulated "
                "initialization failure");
  EXPECT_FALSE(registry_.Get(MNT_PLUGIN_KIND_BACKEND, "init_fails").ok());
}

TEST_F(CompatTest, GetReportsTheRefusalOfTheFileItFinds) {
  auto got = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "major2");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("mnt_backend_major2.so: plugin built against ABI 2.0"));
  got = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "nonexistent");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("unknown backend 'nonexistent' (available: "));
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("v1_0"));
}

}  // namespace
}  // namespace mnt::trainer

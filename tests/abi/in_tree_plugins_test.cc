// Every plugin built in this repository passes the loader's ABI validation
// when loaded from its .so, and is found on the runfiles search path by its
// file name alone (across packages).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/capabilities.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {
namespace {

using ::testing::IsSupersetOf;

struct InTreePlugin {
  MNT_PluginKind kind;
  const char* name;
  const char* package;  // where the .so is built
};

const InTreePlugin kPlugins[] = {
    {MNT_PLUGIN_KIND_BACKEND, "cpu", "plugins/backends/cpu"},
    {MNT_PLUGIN_KIND_PRECISION, "fp32", "plugins/precisions"},
    {MNT_PLUGIN_KIND_PRECISION, "tf32", "plugins/precisions"},
    {MNT_PLUGIN_KIND_PRECISION, "bf16", "plugins/precisions"},
    {MNT_PLUGIN_KIND_PRECISION, "fp16", "plugins/precisions"},
    {MNT_PLUGIN_KIND_PRECISION, "fp8", "plugins/precisions"},
    {MNT_PLUGIN_KIND_MODEL, "mlp", "models/mlp"},
};

TEST(InTreePluginsTest, EachLoadsFromItsSharedObjectAtTheCurrentAbi) {
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", ""));
  for (const InTreePlugin& p : kPlugins) {
    SCOPED_TRACE(p.name);
    auto loaded = registry.Get(p.kind, p.name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_NE((*loaded)->handle, nullptr);
    EXPECT_NE((*loaded)->origin.find(std::string(p.package) + "/" +
                                     PluginFileName(p.kind, p.name)),
              std::string::npos)
        << (*loaded)->origin;
    const MNT_Plugin_Api* api = (*loaded)->api;
    EXPECT_EQ(api->abi_version.major_version, MNT_ABI_MAJOR);
    EXPECT_EQ(api->abi_version.minor_version, MNT_ABI_MINOR);
    EXPECT_EQ(api->kind, p.kind);
    EXPECT_STREQ(api->name, p.name);
    ASSERT_NE(api->description, nullptr);
    EXPECT_EQ(std::string(api->description).find('\n'), std::string::npos);
  }
}

// ABI 1.9: each advertises every capability of its kind (what every
// in-tree plugin of 1.7/1.8 was given by its minor), so the host's choices
// stay what they were.
TEST(InTreePluginsTest, EachAdvertisesEveryCapabilityOfItsKind) {
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", ""));
  for (const InTreePlugin& p : kPlugins) {
    SCOPED_TRACE(p.name);
    auto loaded = registry.Get(p.kind, p.name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const MNT_Plugin_Api* api = (*loaded)->api;
    ASSERT_NE(sdk::FindCapabilitiesExtension(api), nullptr);
    for (const sdk::CapabilityInfo& c : sdk::kCapabilities) {
      EXPECT_EQ(sdk::HasCapability(api, c.capability), c.kind == p.kind) << c.name;
    }
  }
}

TEST(InTreePluginsTest, TheCpuBackendOffersEvents) {
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", ""));
  auto cpu = registry.Get(MNT_PLUGIN_KIND_BACKEND, "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->api->backend->struct_size, MNT_Backend_Api_STRUCT_SIZE);
  EXPECT_TRUE(HasEvents((*cpu)->api));
}

TEST(InTreePluginsTest, AvailableListsThemBeforeAnyIsLoaded) {
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", ""));
  EXPECT_THAT(registry.Available(MNT_PLUGIN_KIND_PRECISION),
              IsSupersetOf({"bf16", "fp16", "fp32", "fp8", "tf32"}));
  EXPECT_THAT(registry.Available(MNT_PLUGIN_KIND_BACKEND),
              IsSupersetOf({"cpu"}));
  EXPECT_THAT(registry.Available(MNT_PLUGIN_KIND_MODEL),
              IsSupersetOf({"mlp"}));
  EXPECT_TRUE(registry.Loaded().empty()) << "Available must not load";
}

}  // namespace
}  // namespace mnt::trainer

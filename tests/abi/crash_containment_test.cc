// A plugin that crashes while loading is contained: the forked probe the
// plugin tools use reports the stage and the signal in one line, and the
// calling process survives to report it.
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/plugin_info/plugin_probe.h"

namespace mnt::tools {
namespace {

using ::testing::HasSubstr;

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/mantissa/" + path;
}

TEST(CrashContainmentTest, SegfaultInPluginInitializeIsReportedInOneLine) {
  const std::string path = Runfile("tests/abi/mnt_backend_init_crashes.so");
  absl::Status s = ProbePluginInChild(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(path + ": plugin crashed in Plugin_Initialize (signal 11"));
  EXPECT_EQ(s.message().find('\n'), absl::string_view::npos);
}

TEST(CrashContainmentTest, AFailingInitializerIsARefusalNotACrash) {
  const std::string path = Runfile("tests/abi/mnt_backend_init_fails.so");
  absl::Status s = ProbePluginInChild(path);
  EXPECT_EQ(std::string(s.message()),
            path + ": Plugin_Initialize failed: bad backend: simulated "
                   "initialization failure");
}

TEST(CrashContainmentTest, HealthyPluginsPassTheProbe) {
  for (const char* p : {"plugins/backends/cpu/mnt_backend_cpu.so",
                        "tests/abi/mnt_backend_v1_0.so"}) {
    absl::Status s = ProbePluginInChild(Runfile(p));
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(CrashContainmentTest, ExportedSymbolsOfAPluginAreJustTheEntryPoint) {
  std::vector<std::string> symbols;
  ASSERT_TRUE(
      ExportedSymbols(Runfile("plugins/backends/cpu/mnt_backend_cpu.so"),
                      &symbols)
          .ok());
  EXPECT_EQ(symbols, std::vector<std::string>{"MNT_GetPluginApi"});
  absl::Status s = ExportedSymbols(Runfile("tests/abi/crash_containment_test.cc"),
                                   &symbols);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace mnt::tools

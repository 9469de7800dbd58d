// plugin_conformance <file.so> [--seed=N] [--options=key=value,...]
//
//   tools/bazel run //tools/plugin_conformance -- /path/to/mnt_model_linear.so
//
// Probes the plugin in a child process (a crash while loading is reported in
// one line), loads it as the trainer does, runs the conformance suite for its
// kind and prints one PASS/FAIL/SKIP line per check and a summary. Exit
// status: 0 all passed, 1 a check failed or the plugin was refused, 2 usage.
// --options go to a backend's Backend_Create, a model's Model_Create or a
// precision plugin's LossScaler_Create (as its precision options).
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "tools/plugin_conformance/conformance.h"
#include "tools/plugin_info/plugin_probe.h"
#include "trainer/loader/plugin_registry.h"

int main(int argc, char** argv) {
  std::string path, options;
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--seed=", 0) == 0) {
      char* end = nullptr;
      seed = std::strtoull(a.c_str() + 7, &end, 10);
      if (*end != '\0' || a.size() == 7) {
        std::fprintf(stderr, "plugin_conformance: error: bad %s\n", a.c_str());
        return 2;
      }
    } else if (a.rfind("--options=", 0) == 0) {
      options = a.substr(10);
    } else if (path.empty() && a.rfind("-", 0) != 0) {
      path = a;
    } else {
      path.clear();
      break;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr,
                 "usage: plugin_conformance <file.so> [--seed=N] "
                 "[--options=key=value,...]\n");
    return 2;
  }
  if (absl::Status s = mnt::tools::ProbePluginInChild(path); !s.ok()) {
    std::fprintf(stderr, "plugin_conformance: error: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  mnt::trainer::PluginRegistry registry({});
  if (absl::Status s = registry.LoadFile(path); !s.ok()) {
    std::fprintf(stderr, "plugin_conformance: error: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  const MNT_Plugin_Api* api = registry.Loaded().front()->api;
  std::printf("plugin %s (%s %s, ABI %d.%d), seed %llu\n", path.c_str(),
              mnt::trainer::PluginKindName(api->kind), api->name,
              api->abi_version.major_version, api->abi_version.minor_version,
              static_cast<unsigned long long>(seed));
  mnt::conformance::Report report;
  mnt::conformance::RunConformance(api, options, seed, &report);
  std::printf("conformance: %d passed, %d failed, %d skipped\n", report.passed(),
              report.failed(), report.skipped());
  return report.failed() == 0 ? 0 : 1;
}

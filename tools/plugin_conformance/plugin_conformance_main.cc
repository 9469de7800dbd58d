// plugin_conformance <file.so> [--seed=N] [--options=key=value,...]
//
//   tools/bazel run //tools/plugin_conformance -- /path/to/mnt_model_linear.so
//   mpirun -np 3 plugin_conformance mnt_backend_cpu.so   # collectives, 3 ranks
//
// Probes the plugin in a child process (a crash while loading is reported in
// one line), loads it as the trainer does, runs the conformance suite for its
// kind and prints one PASS/FAIL/SKIP line per check and a summary. Exit
// status: 0 all passed, 1 a check failed or the plugin was refused, 2 usage.
// --options go to a backend's Backend_Create, a model's Model_Create or a
// precision plugin's LossScaler_Create and Precision_GetScalingRecipe (as
// its precision options).
//
// Under Open MPI's mpirun (OMPI_COMM_WORLD_SIZE/RANK) every rank runs the
// suite with rank 0's seed, and a backend's collectives extension is checked
// with all the ranks (MPI loaded at run time, for the host-side exchanges
// only); outside mpirun it is checked with world size 1. Rank 0 prints
// every line; the other ranks print their failures, prefixed "rank R: ".
// Every rank exits 1 when any rank failed a check.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "plugins/conformance/conformance.h"
#include "plugins/conformance/host_exchange.h"
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
  // After the probe's fork: MPI is initialised here, for world size > 1.
  mnt::conformance::HostExchange host;
  if (std::string why = host.Start([](const char* k) { return std::getenv(k); });
      !why.empty()) {
    std::fprintf(stderr, "plugin_conformance: error: under mpirun: %s\n", why.c_str());
    return 1;
  }
  const int rank = host.rank(), world = host.world_size();
  seed = host.BroadcastU64(seed);  // every rank checks the same cases
  if (rank == 0) {
    std::printf("plugin %s (%s %s, ABI %d.%d), seed %llu, world size %d%s\n", path.c_str(),
                mnt::trainer::PluginKindName(api->kind), api->name,
                api->abi_version.major_version, api->abi_version.minor_version,
                static_cast<unsigned long long>(seed), world,
                world > 1 || !host.launcher().empty()
                    ? (" (" + host.launcher() + ", " + std::to_string(world) +
                       " ranks; rank 0 prints every check, the others their failures)")
                          .c_str()
                    : " (one process, not under mpirun)");
    std::fflush(stdout);
  }
  const std::string prefix = rank == 0 ? "" : "rank " + std::to_string(rank) + ": ";
  mnt::conformance::Report report(stdout, prefix, /*failures_only=*/rank != 0);
  mnt::conformance::RunConformance(api, options, seed, &host, &report);
  std::printf("%sconformance: %d passed, %d failed, %d skipped%s\n", prefix.c_str(),
              report.passed(), report.failed(), report.skipped(),
              world > 1 ? (" on rank " + std::to_string(rank) + " of world size " +
                           std::to_string(world))
                              .c_str()
                        : "");
  std::fflush(stdout);
  int failed_ranks = report.failed() == 0 ? 0 : 1;
  if (world > 1) {
    const std::vector<std::string> all =
        host.AllGather(std::to_string(report.passed()) + " " + std::to_string(report.failed()));
    std::string ranks;
    failed_ranks = 0;
    for (int r = 0; r < world; ++r) {
      int p = 0, f = 0;
      std::sscanf(all[r].c_str(), "%d %d", &p, &f);
      failed_ranks += f > 0 ? 1 : 0;
      ranks += " rank " + std::to_string(r) + ": " + std::to_string(p) + " passed, " +
               std::to_string(f) + " failed;";
    }
    if (rank == 0) {
      std::printf("conformance world size %d:%s %s\n", world, ranks.c_str(),
                  failed_ranks == 0 ? ("all " + std::to_string(world) + " ranks passed").c_str()
                                    : (std::to_string(failed_ranks) + " rank(s) failed").c_str());
      std::fflush(stdout);
    }
  }
  return failed_ranks == 0 ? 0 : 1;
}

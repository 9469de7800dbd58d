#include "trainer/cli/dry_run.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/text/byte_size.h"
#include "trainer/dryrun/memory_estimate.h"

namespace mnt::trainer {

memory::EstimateSetup EstimateSetupFor(const TrainConfig& config, int64_t ranks,
                                       const MNT_DataSpec& spec) {
  memory::EstimateSetup setup;
  setup.device = config.device();
  setup.backend_options = config.backend_options();
  setup.model = config.model();
  setup.model_options = config.model_options();
  setup.data_spec = spec;
  setup.optimizer = config.optimizer().name();
  setup.optimizer_options = config.optimizer().optimizer_options();
  setup.precision_options = config.precision_options();
  setup.ranks = static_cast<int>(ranks);
  setup.zero_stage = static_cast<int>(config.zero_stage());
  setup.bucket_mb = config.bucket_mb();
  setup.freeze = config.freeze();
  return setup;
}

absl::Status PrintDryRun(const TrainConfig& config, PluginRegistry* registry, int64_t ranks,
                         const MNT_DataSpec& spec, FILE* out) {
  auto estimator =
      memory::MemoryEstimator::Create(EstimateSetupFor(config, ranks, spec), registry);
  if (!estimator.ok()) return estimator.status();
  // --precision=auto chooses among these by measuring; fp8 only when asked.
  const std::vector<std::string> precisions =
      config.precision() == "auto" ? std::vector<std::string>{"fp32", "tf32", "bf16", "fp16"}
                                   : std::vector<std::string>{config.precision()};
  std::vector<memory::MemoryEstimate> estimates;
  for (const std::string& p : precisions) {
    auto e = (*estimator)->Estimate(p, config.batch_size());
    if (!e.ok()) return e.status();
    estimates.push_back(*e);
  }
  const int64_t device = (*estimator)->device_memory_bytes();
  std::fprintf(out, "dry run: %s%s on the %s backend, batch size %lld%s, %lld parameters\n",
               config.model().c_str(),
               config.model_options().empty() ? ""
                                              : (" (" + config.model_options() + ")").c_str(),
               config.device().c_str(), static_cast<long long>(config.batch_size()),
               ranks > 1 ? absl::StrCat(" per rank, one rank of ", ranks).c_str() : "",
               static_cast<long long>(estimates[0].num_parameters));
  if (estimates[0].num_frozen > 0) {
    std::fprintf(out, "  --freeze=%s: %lld of them frozen (no gradient, master or optimizer "
                      "state), %lld trained\n",
                 config.freeze().c_str(), static_cast<long long>(estimates[0].num_frozen),
                 static_cast<long long>(estimates[0].num_parameters - estimates[0].num_frozen));
  }
  std::string header = absl::StrFormat("  %-18s", "memory");
  for (const memory::MemoryEstimate& e : estimates) absl::StrAppendFormat(&header, "%14s", e.precision);
  std::fprintf(out, "%s\n", header.c_str());
  for (size_t r = 0; r < estimates[0].Rows().size(); ++r) {
    std::string line = absl::StrFormat("  %-18s", estimates[0].Rows()[r].first);
    for (const memory::MemoryEstimate& e : estimates) {
      absl::StrAppendFormat(&line, "%14s", FormatBytes(e.Rows()[r].second));
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  if (device > 0) {
    std::string line = absl::StrFormat("  %-18s", absl::StrCat("of ", FormatBytes(device)));
    for (const memory::MemoryEstimate& e : estimates) {
      absl::StrAppendFormat(&line, "%14s", e.total() <= device ? "fits" : "does not fit");
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fprintf(out,
               "nothing was trained or written (--dry_run); other batch sizes and precisions: "
               "tools/bazel run //tools/memory:estimate\n");
  return absl::OkStatus();
}

}  // namespace mnt::trainer

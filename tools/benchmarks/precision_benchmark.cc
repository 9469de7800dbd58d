// Measures what the README claims: for each precision, MLP training speed,
// accuracy on the default task and memory by category from the backend
// allocator. `tools/bazel run //tools/benchmarks:precision_benchmark`
// (flags: --device, --model_options, --batch_size, --steps, --precisions).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

ABSL_FLAG(std::string, bench_device, "cpu", "backend plugin to measure");
ABSL_FLAG(std::string, bench_model_options, "hidden=1024:1024",
          "MLP options (bigger than the default so GEMMs dominate)");
ABSL_FLAG(int64_t, bench_batch_size, 256, "micro-batch size");
ABSL_FLAG(int64_t, bench_steps, 200, "optimizer steps per precision");
ABSL_FLAG(std::string, bench_precisions, "fp32,tf32,bf16,fp16", "comma-separated");

namespace mnt::trainer {
namespace {

std::string MiB(int64_t b) { return absl::StrFormat("%.2f", b / 1048576.0); }

int Run(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", argv[0]));
  std::printf(
      "MLP (%s) on digits, batch %lld, %lld steps, device %s\n\n"
      "%-6s %12s %9s %9s %9s %9s %9s %11s %9s\n",
      absl::GetFlag(FLAGS_bench_model_options).c_str(),
      static_cast<long long>(absl::GetFlag(FLAGS_bench_batch_size)),
      static_cast<long long>(absl::GetFlag(FLAGS_bench_steps)),
      absl::GetFlag(FLAGS_bench_device).c_str(), "prec", "samples/s", "eval acc",
      "weights", "master", "grads", "optim", "activations", "peak MiB");
  for (absl::string_view p :
       absl::StrSplit(absl::GetFlag(FLAGS_bench_precisions), ',')) {
    TrainConfig c = DefaultTrainConfig();
    c.set_model("mlp");  // this benchmark measures the MLP on digits
    c.mutable_data()->set_dataset("digits");
    c.set_precision(std::string(p));
    c.set_device(absl::GetFlag(FLAGS_bench_device));
    c.set_model_options(absl::GetFlag(FLAGS_bench_model_options));
    c.set_batch_size(absl::GetFlag(FLAGS_bench_batch_size));
    c.set_steps(absl::GetFlag(FLAGS_bench_steps));
    c.set_eval_every(0);
    c.set_progress("none");
    if (auto s = ValidateTrainConfig(c); !s.ok()) {
      std::fprintf(stderr, "precision_benchmark: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    auto data = LoadDatasets(c, "");
    if (!data.ok()) {
      std::fprintf(stderr, "precision_benchmark: %s\n",
                   std::string(data.status().message()).c_str());
      return 1;
    }
    auto t = Trainer::Create(c, &registry, std::move(data->train), std::move(data->eval));
    if (!t.ok()) {
      std::fprintf(stderr, "precision_benchmark: %s\n",
                   std::string(t.status().message()).c_str());
      return 1;
    }
    if (auto s = (*t)->Train(nullptr); !s.ok()) {
      std::fprintf(stderr, "precision_benchmark: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    const FinalReport r = (*t)->Report();
    auto peak = [&](const std::string& cat) {
      for (const MemoryLine& m : r.memory) if (m.category == cat) return m.peak_bytes;
      return int64_t{0};
    };
    std::printf("%-6s %12.0f %8.2f%% %9s %9s %9s %9s %11s %9s\n",
                std::string(p).c_str(), r.samples_per_second, 100 * r.last_eval.accuracy,
                MiB(peak("weights")).c_str(), MiB(peak("master_weights")).c_str(),
                MiB(peak("gradients")).c_str(), MiB(peak("optimizer_state")).c_str(),
                MiB(peak("activations")).c_str(), MiB(peak("total")).c_str());
  }
  std::printf("\nmemory columns are peak MiB per category from the backend allocator\n");
  return 0;
}

}  // namespace
}  // namespace mnt::trainer

int main(int argc, char** argv) { return mnt::trainer::Run(argc, argv); }

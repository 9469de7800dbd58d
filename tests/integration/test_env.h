// Shared set-up for the cross-cutting tests: the in-tree plugin .so files and
// Debian's digits csv come in as runfiles; a trainer is built the way the CLI
// builds one.
#ifndef MANTISSA_TESTS_INTEGRATION_TEST_ENV_H_
#define MANTISSA_TESTS_INTEGRATION_TEST_ENV_H_

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/metrics.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer::testing {

inline std::string RunfilesRoot() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".");
}

inline std::vector<std::string> InTreePluginDirs() {
  const std::string ws = RunfilesRoot() + "/mantissa/";
  return {ws + "plugins/backends/cpu", ws + "plugins/precisions", ws + "models/mlp",
          ws + "models/cnn", ws + "tests/abi"};
}

inline std::string DigitsCsv() {
  return RunfilesRoot() + "/sklearn_digits/digits.csv.gz";
}

// A whole file ("" when it cannot be read): logs and metrics files the
// tests read back.
inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp");
}

// TempDir()/text.txt holding `lines` numbered lines of English (each line
// differs, so a byte-level GPT has something to learn): the small text
// corpus of the GPT-2 integration tests. Its path.
inline std::string WriteNumberedText(int lines) {
  const std::string path = TempDir() + "/text.txt";
  std::ofstream t(path);
  for (int i = 0; i < lines; ++i) t << "the quick brown fox " << i << " jumps over the lazy dog\n";
  return path;
}

// One run of `binary` (a path under this test's runfiles, e.g.
// "trainer/cli/train") with `args`, stdout and stderr kept apart in files
// under the test's temp dir; `launcher` goes before it (e.g. mpirun's prefix).
struct SplitRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};
inline SplitRun RunFromRunfiles(const std::string& binary, const std::string& args,
                                const std::string& launcher = "") {
  static int n = 0;
  const std::string base = TempDir() + "/run_" + std::to_string(n++);
  const std::string cmd = launcher + " " + RunfilesRoot() + "/mantissa/" + binary + " " + args +
                          " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(cmd.c_str());
  SplitRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadWholeFile(base + ".out");
  r.err = ReadWholeFile(base + ".err");
  return r;
}

// The default configuration, but the MLP on digits (these tests predate the
// GPT main job), with a converted-data cache inside the test's temp dir,
// quiet output, and `precision`.
// One run of the train binary from this test's runfiles: `env` before the
// command (e.g. "MANTISSA_FAULT_...=..." or ""), `flags` after it; stdout and
// stderr go to <base>.log, metrics to <base>.jsonl.
struct BinaryRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr
  std::string jsonl;
};
inline BinaryRun RunTrainBinary(const std::string& base, const std::string& env,
                                const std::string& flags) {
  const std::string cmd = env + " " + RunfilesRoot() + "/mantissa/trainer/cli/train " + flags +
                          " --metrics_jsonl=" + base + ".jsonl > " + base + ".log 2>&1";
  BinaryRun r;
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = ReadWholeFile(base + ".log");
  r.jsonl = ReadWholeFile(base + ".jsonl");
  return r;
}

inline TrainConfig TestConfig(const std::string& precision) {
  TrainConfig c = DefaultTrainConfig();
  c.set_model("mlp");
  c.mutable_data()->set_dataset("digits");
  c.set_steps(600);
  c.set_precision(precision);
  c.set_device("cpu");
  c.set_progress("none");
  c.mutable_data()->set_cache_dir(TempDir() + "/cache");
  return c;
}

inline absl::StatusOr<std::unique_ptr<Trainer>> MakeTrainer(
    const TrainConfig& config, PluginRegistry* registry) {
  auto data = LoadDatasets(config, DigitsCsv());
  if (!data.ok()) return data.status();
  return Trainer::Create(config, registry, std::move(data->train),
                         std::move(data->eval));
}

// Records everything the loop reports.
class RecordingSink : public MetricsSink {
 public:
  void OnStep(const StepMetrics& m) override { steps.push_back(m); }
  void OnEval(const EvalMetrics& m) override { evals.push_back(m); }
  void OnMessage(const std::string& line) override { messages.push_back(line); }
  std::vector<StepMetrics> steps;
  std::vector<EvalMetrics> evals;
  std::vector<std::string> messages;
};

}  // namespace mnt::trainer::testing

#endif  // MANTISSA_TESTS_INTEGRATION_TEST_ENV_H_

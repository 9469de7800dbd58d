// mantissa train: the command-line entry point (`tools/bazel run //:train`).
//
// Every failure ends the run with one line on stderr, "mantissa: error: ...",
// and a non-zero exit code; nothing already on disk is overwritten by a run
// that fails to start.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/cli/model_defaults.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/config/flags.h"
#include "trainer/core/console_reporter.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/core/trainer.h"
#include "trainer/data/digits.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {
namespace {

int Fail(const absl::Status& s) {
  std::string msg(s.message());
  for (char& c : msg) {
    if (c == '\n') c = ' ';  // one line, always
  }
  std::fprintf(stderr, "mantissa: error: %s\n", msg.c_str());
  return 1;
}

// Where `bazel run` put Debian's digits csv among the runfiles, if anywhere.
std::string DigitsRunfile(const std::string& argv0) {
  std::vector<std::string> roots;
  if (const char* r = std::getenv("RUNFILES_DIR")) roots.push_back(r);
  roots.push_back(argv0 + ".runfiles");
  for (const std::string& root : roots) {
    const std::string p = root + "/sklearn_digits/digits.csv.gz";
    if (FILE* f = std::fopen(p.c_str(), "rb")) {
      std::fclose(f);
      return p;
    }
  }
  return "";
}

int Run(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Trains a model with a chosen precision.\n"
      "  train --precision=fp32|tf32|bf16|fp16|auto --device=cpu|cuda|auto "
      "--model=mlp [--config=run.textproto] [flags]");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", rest[1],
                     "' (flags are written --name=value)")));
  }
  auto config = ConfigFromFlags();
  if (!config.ok()) return Fail(config.status());

  PluginRegistry registry(
      PluginRegistry::DefaultSearchPath(config->plugin_path(), argv[0]));
  auto device = ResolveDevice(config->device(), &registry);
  if (!device.ok()) return Fail(device.status());
  config->set_device(*device);
  // A --config file is taken as the complete intent: model defaults fill in
  // only what was left alone on a plain command line.
  const bool config_file = FlagGivenOnCommandLine("config");
  const std::vector<std::string> defaults = ApplyModelDefaults(
      *device, [&](const std::string& f) { return config_file || FlagGivenOnCommandLine(f); },
      &*config);
  if (auto s = ValidateTrainConfig(*config); !s.ok()) return Fail(s);
  if (config->checkpoint_dir().empty() && config->model() == "gpt2" &&
      config->data().dataset() == "fortunes") {
    // The main job keeps its result (README); other runs opt in.
    const std::string cache = config->data().cache_dir().empty()
                                  ? DefaultCacheDir()
                                  : config->data().cache_dir();
    config->set_checkpoint_dir(cache + "/runs/gpt2-fortunes");
  }
  if (config->gradient_checkpointing()) {
    // The model owns recomputation; the flag is its option.
    const std::string& o = config->model_options();
    config->set_model_options(o.empty() ? "checkpointing=1"
                                        : o + ",checkpointing=1");
  }

  auto data = LoadDatasets(*config, DigitsRunfile(argv[0]));
  if (!data.ok()) return Fail(data.status());

  auto trainer = Trainer::Create(*config, &registry, std::move(data->train),
                                 std::move(data->eval));
  if (!trainer.ok()) return Fail(trainer.status());

  const ProgressStyle style = ResolveProgressStyle(config->progress(), stdout);
  ConsoleReporter reporter(stdout, style, config->log_every(),
                           config->metrics_jsonl());
  if (!reporter.jsonl_ok()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "cannot open --metrics_jsonl=", config->metrics_jsonl(), " for writing")));
  }
  reporter.OnMessage(absl::StrCat("mantissa: ", (*trainer)->device(), " backend, ",
                                  (*trainer)->precision(), " precision, model ",
                                  config->model(), " (",
                                  (*trainer)->num_parameters(), " parameters)"));
  reporter.OnMessage(data->description);
  if (!defaults.empty()) {
    reporter.OnMessage(absl::StrCat("defaults for ", config->model(), " on ",
                                    *device, ": ", absl::StrJoin(defaults, " ")));
  }

  if (config->resume() && !config->checkpoint_dir().empty()) {
    const std::string path = LatestCheckpointPath(config->checkpoint_dir());
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
      if (auto s = (*trainer)->RestoreCheckpoint(path); !s.ok()) return Fail(s);
      reporter.OnMessage(absl::StrCat("resumed from ", path, " at step ",
                                      (*trainer)->step()));
    } else {
      reporter.OnMessage(absl::StrCat("no checkpoint at ", path, "; starting fresh"));
    }
  }

  if (auto s = (*trainer)->Train(&reporter); !s.ok()) return Fail(s);
  std::fputs(FormatFinalReport((*trainer)->Report()).c_str(), stdout);
  return 0;
}

}  // namespace
}  // namespace mnt::trainer

int main(int argc, char** argv) { return mnt::trainer::Run(argc, argv); }

// mantissa train: the command-line entry point (`tools/bazel run //:train`).
//
// Every failure ends the run with one line on stderr, "mantissa: error: ...",
// and a non-zero exit code; nothing already on disk is overwritten by a run
// that fails to start.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainer/cli/eval_only.h"
#include "trainer/cli/help.h"
#include "trainer/cli/precision_probe.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/cli/model_defaults.h"
#include "trainer/cli/run_header.h"
#include "trainer/cli/run_schedule.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/cli/user_directory.h"
#include "trainer/config/command_line_check.h"
#include "trainer/config/config.h"
#include "trainer/config/flags.h"
#include "trainer/core/console_reporter.h"
#include "trainer/core/device_choice.h"
#include "trainer/checkpoint/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/core/stop_signals.h"
#include "trainer/core/trainer.h"
#include "trainer/data/digits.h"
#include "trainer/loader/plugin_registry.h"
#include "trainer/parallel/host_comm.h"
#include "trainer/parallel/launch.h"
#include "trainer/parallel/rank_agreement.h"
#include "trainer/sinks/fanout_sink.h"
#include "trainer/sinks/jsonl_sink.h"
#include "trainer/tensorboard/tensorboard_sink.h"

ABSL_DECLARE_FLAG(std::string, config);  // trainer/config/flags.cc

ABSL_FLAG(bool, verbose, false,
          "Say more where it helps: an unknown plugin name lists the directories searched");

namespace mnt::trainer {
namespace {

// Set once this process is one rank of a data-parallel job.
HostComm* g_ranks = nullptr;

int Fail(const absl::Status& s) {
  if (g_ranks == nullptr) return ToolError("mantissa", s.message());
  ToolError("mantissa", g_ranks->rank() == 0
                            ? std::string(s.message())
                            : absl::StrCat("rank ", g_ranks->rank(), ": ", s.message()));
  // Not MPI_Finalize, which would wait for ranks that may be waiting in a
  // collective for this one: the exit code makes the launcher end the job.
  std::fflush(nullptr);
  std::_Exit(1);
}

// A failure every rank found alike (the ranks' agreement check): rank 0
// says it once, the others leave quietly.
int FailOnce(const absl::Status& s) {
  if (g_ranks != nullptr && g_ranks->rank() != 0) {
    std::fflush(nullptr);
    std::_Exit(1);
  }
  return Fail(s);
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

// `--resume=if_exists` (the form scripts use) as the two flags it means;
// absl's bool --resume takes only true/false.
std::vector<char*> ExpandResumeIfExists(int argc, char** argv) {
  static char resume[] = "--resume";
  static char if_exists[] = "--resume_if_exists";
  std::vector<char*> out;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--resume=if_exists") {
      out.push_back(resume);
      out.push_back(if_exists);
    } else {
      out.push_back(argv[i]);
    }
  }
  return out;
}

int Run(int original_argc, char** original_argv) {
  // Relative paths mean the user's directory, under tools/bazel run too.
  std::string argv0;
  if (auto s = EnterUserDirectory(original_argv[0], &argv0); !s.ok()) return Fail(s);
  original_argv[0] = argv0.data();
  std::vector<char*> args = ExpandResumeIfExists(original_argc, original_argv);
  const int argc = static_cast<int>(args.size());
  char** argv = args.data();
  absl::SetProgramUsageMessage(UsageText());
  // Before absl parses: its --help finds no flags in a file named after the
  // program and exits 1.
  if (std::optional<int> code = HandleHelpFlags(argc, argv, stdout)) return *code;
  // absl would print its own "ERROR: ..." lines and exit: check first.
  if (auto s = CheckCommandLine(argc, argv); !s.ok()) return Fail(s);
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
  registry.set_verbose_errors(absl::GetFlag(FLAGS_verbose));
  auto device = ResolveDevice(config->device(), &registry);
  if (!device.ok()) return Fail(device.status());
  config->set_device(*device);
  // Model and device defaults fill in what neither the command line nor the
  // --config file chose.
  const std::vector<std::string> defaults =
      ApplyModelDefaults(*device, FieldChosenByUser, &*config);
  ApplyScheduleDefaults(FieldChosenByUser, &*config);
  if (auto s = ValidateTrainConfig(*config); !s.ok()) return Fail(s);
  if (auto s = CheckModelTakesDataset(*config); !s.ok()) return Fail(s);
  // Data parallel: one process per rank, launched by mpirun or srun. Only
  // rank 0 prints and writes logs and checkpoints (trainer/parallel/).
  const Launch launch = DetectLaunch();
  std::unique_ptr<HostComm> ranks;
  if (launch.world_size > 1 && config->data_parallel() != "off") {
    auto created = HostComm::Create(launch.world_size, launch.local_rank);
    if (!created.ok()) return Fail(created.status());
    ranks = std::move(*created);
    g_ranks = ranks.get();
    if (ranks->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
      return Fail(absl::InternalError("rank output: cannot reopen stdout on /dev/null"));
    }
    // The command first, before any rank loads plugins or data for it.
    RankFacts command;
    for (absl::string_view line : absl::StrSplit(ConfigToText(*config), '\n')) {
      command.emplace_back("config", std::string(line));
    }
    if (auto s = CheckRanksAgree(*ranks, command); !s.ok()) return FailOnce(s);
  }
  const bool rank0 = ranks == nullptr || ranks->rank() == 0;
  // Every run keeps its work: without --checkpoint_dir, a folder of its own
  // (--run_name, else model-dataset-precision) under <cache>/runs.
  bool own_folder = false;
  if (config->checkpoint_dir() == "none") {
    config->set_checkpoint_dir("");
  } else if (config->checkpoint_dir().empty()) {
    const std::string cache = config->data().cache_dir().empty()
                                  ? DefaultCacheDir()
                                  : config->data().cache_dir();
    const std::string name =
        !config->run_name().empty()
            ? config->run_name()
            // An auto run's folder says auto: resuming it finds it whatever
            // precision its probe chose (the checkpoint says which).
            : absl::StrCat(config->model(), "-", config->data().dataset(), "-",
                           config->precision() == "auto"
                               ? std::string("auto")
                               : ResolvePrecision(config->precision(), *device));
    config->set_checkpoint_dir(absl::StrCat(cache, "/runs/", name));
    own_folder = true;
  }
  if (auto s = ResolveRunOutputs(&*config); !s.ok()) return Fail(s);
  const bool resume = config->resume() || config->resume_if_exists();
  if (config->eval_only() && !resume && config->resume_from().empty()) {
    return Fail(absl::InvalidArgumentError(
        "--eval_only needs a checkpoint to evaluate: --resume_from=<checkpoint file or "
        "directory>, or --resume (the run's own folder, or --checkpoint_dir / --run_name)"));
  }
  if (resume && config->checkpoint_dir().empty() && config->resume_from().empty()) {
    return Fail(absl::InvalidArgumentError(
        "--resume is invalid with --checkpoint_dir=none: expected a directory to resume "
        "from (or --resume_from=<checkpoint file or directory>)"));
  }
  if (config->gradient_checkpointing()) {
    // The model owns recomputation; the flag is its option.
    const std::string& o = config->model_options();
    config->set_model_options(o.empty() ? "checkpointing=1"
                                        : o + ",checkpointing=1");
  }

  // --precision=auto: a resumed run keeps its checkpoint's precision; a new
  // one measures (trainer/cli/precision_probe.h).
  std::vector<std::string> probe_lines;
  if (config->precision() == "auto") {
    std::string from;
    if (!config->resume_from().empty()) {
      auto path = ResolveCheckpointPath(config->resume_from());
      if (path.ok()) from = *path;
    } else if (resume && std::filesystem::exists(LatestCheckpointPath(config->checkpoint_dir()))) {
      from = LatestCheckpointPath(config->checkpoint_dir());
    }
    if (!from.empty()) {
      auto ckpt = ReadCheckpoint(from);
      if (!ckpt.ok()) return Fail(ckpt.status());
      config->set_precision(ckpt->precision());
      std::fprintf(stdout, "precision: %s (the checkpoint's; --precision=auto)\n",
                   ckpt->precision().c_str());
    } else if (!config->eval_only()) {
      auto probe = ProbePrecisions(*config, &registry, DigitsRunfile(argv[0]));
      if (!probe.ok()) return Fail(probe.status());
      probe_lines = probe->Lines();
      for (const std::string& line : probe_lines) std::fprintf(stdout, "%s\n", line.c_str());
      // Every rank trains in rank 0's choice (their timings differ).
      std::string chosen = probe->chosen;
      if (ranks != nullptr) {
        if (auto s = ranks->Broadcast(&chosen); !s.ok()) return Fail(s);
      }
      config->set_precision(chosen);
    }
  }

  // Rank 0 converts and caches the data first; the others read its cache.
  if (!rank0) {
    if (auto s = ranks->Any(false); !s.ok()) return Fail(s.status());
  }
  auto data = LoadDatasets(*config, DigitsRunfile(argv[0]));
  if (!data.ok()) return Fail(data.status());
  if (ranks != nullptr && rank0) {
    if (auto s = ranks->Any(false); !s.ok()) return Fail(s.status());
  }
  const std::string data_fact = absl::StrCat(data->train->size(), " training and ",
                                             data->eval ? data->eval->size() : 0,
                                             " evaluation examples: ", data->description);
  const int targets_per_example = data->train->spec().targets_per_example;
  auto epochs_note =
      ResolveEpochs(data->train->size(), ranks != nullptr ? ranks->world_size() : 1, &*config);
  if (!epochs_note.ok()) return Fail(epochs_note.status());
  // A subword model goes with the run's checkpoints (run_config_file.h).
  if (!data->tokenizer_model.empty()) {
    config->mutable_data()->set_tokenizer_model(data->tokenizer_model);
  }

  auto trainer = Trainer::Create(*config, &registry, std::move(data->train),
                                 std::move(data->eval), ranks.get());
  if (!trainer.ok()) return Fail(trainer.status());

  const ProgressStyle style = ResolveProgressStyle(config->progress(), stdout);
  ConsoleReporter console(stdout, style, config->log_every());
  console.OnMessage(absl::StrCat("mantissa: ", (*trainer)->device(), " backend, ",
                                 (*trainer)->precision(), " precision, model ",
                                 config->model(), " (", (*trainer)->num_parameters(),
                                 " parameters)"));
  console.OnMessage(data->description);
  if (!data->shards_description.empty()) console.OnMessage(data->shards_description);
  if (!epochs_note->empty()) console.OnMessage(*epochs_note);
  if (!(*trainer)->loss_scaling_description().empty()) {
    console.OnMessage((*trainer)->loss_scaling_description());
  }
  if (!defaults.empty()) {
    console.OnMessage(absl::StrCat("defaults for ", config->model(), " on ", *device,
                                   ": ", absl::StrJoin(defaults, " ")));
  }
  if (!(*trainer)->data_parallel_description().empty()) {
    console.OnMessage((*trainer)->data_parallel_description());
  }

  if (rank0 && !config->checkpoint_dir().empty() && !config->eval_only()) {
    // Only our own `<name>.tmp.<pid>` pattern, only here, only dead writers.
    for (const std::string& name : RemoveStaleTempFiles(config->checkpoint_dir())) {
      console.OnMessage(absl::StrCat("removed ", config->checkpoint_dir(), "/", name,
                                     " (a temp file left by a run that died while saving)"));
    }
  }

  std::string resumed_from;
  if (!config->resume_from().empty()) {
    // An explicit checkpoint must exist: a typo never silently starts over.
    auto path = ResolveCheckpointPath(config->resume_from());
    if (!path.ok()) return Fail(path.status());
    resumed_from = *path;
  } else if (resume) {
    const std::string path = LatestCheckpointPath(config->checkpoint_dir());
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
      resumed_from = path;
    } else if (config->resume_if_exists() && !config->eval_only()) {
      console.OnMessage(absl::StrCat("no checkpoint at ", path,
                                     "; starting fresh (--resume=if_exists)"));
    } else {
      // A typo in a path or a run name must not silently start over.
      return Fail(absl::NotFoundError(absl::StrCat(
          "--resume: no checkpoint at ", path,
          " (--resume=if_exists starts fresh when there is none; --resume_from=PATH "
          "resumes another checkpoint)")));
    }
  }
  if (!resumed_from.empty()) {
    if (auto s = (*trainer)->RestoreCheckpoint(resumed_from); !s.ok()) {
      // The checkpoint's folder keeps its run's config: point at it.
      const std::string saved = (std::filesystem::path(resumed_from).parent_path() /
                                 kRunConfigFileName).string();
      if (absl::GetFlag(FLAGS_config).empty() && std::filesystem::exists(saved)) {
        return Fail(absl::Status(s.code(), absl::StrCat(s.message(), " (the run's config is ",
                                                        saved, ": add --config=", saved, ")")));
      }
      return Fail(s);
    }
    if (config->eval_only()) {
      return EvaluateOnly(*config, **trainer, registry, targets_per_example, resumed_from);
    }
    if ((*trainer)->step() >= config->steps()) {
      // Before any sink opens: a finished run's logs stay as they are.
      std::fprintf(stdout,
                   "mantissa: nothing to do: %s is at step %lld of --steps=%lld (raise "
                   "--steps to train on)\n",
                   resumed_from.c_str(), static_cast<long long>((*trainer)->step()),
                   static_cast<long long>(config->steps()));
      return 0;
    }
    console.OnMessage(absl::StrCat("resumed from ", resumed_from, " at step ",
                                   (*trainer)->step()));
    if (!(*trainer)->restore_note().empty()) console.OnMessage((*trainer)->restore_note());
  }
  if (!config->checkpoint_dir().empty()) {
    console.OnMessage(absl::StrCat(
        "checkpoints: ", config->checkpoint_dir(),
        own_folder ? " (this run's folder; --run_name or --checkpoint_dir choose another, "
                     "--checkpoint_dir=none keeps none)"
                   : ""));
  }

  // Every rank runs the same plugin files on the same data from the same
  // step, or none starts.
  if (ranks != nullptr) {
    RankFacts facts = {{"training data", data_fact},
                       {"resumed checkpoint", resumed_from.empty()
                                                  ? std::string("none")
                                                  : absl::StrCat(resumed_from, " at step ",
                                                                 (*trainer)->step())}};
    for (const PluginInfo& p :
         MakeRunHeader(*config, **trainer, registry, targets_per_example, resumed_from).plugins) {
      facts.emplace_back(absl::StrCat(p.kind, " plugin ", p.name),
                         absl::StrCat("abi ", p.abi_version, ", ", FileFingerprint(p.origin)));
    }
    if (auto s = CheckRanksAgree(*ranks, facts); !s.ok()) return FailOnce(s);
  }

  // Every sink opens before the first step: a bad path stops the run here,
  // not after an hour of training.
  FanoutSink sinks;
  sinks.Add(&console);
  std::unique_ptr<JsonlSink> jsonl;
  if (rank0 && !config->metrics_jsonl().empty()) {
    auto sink = JsonlSink::Create(config->metrics_jsonl(), /*append=*/!resumed_from.empty());
    if (!sink.ok()) return Fail(sink.status());
    jsonl = std::move(*sink);
    sinks.Add(jsonl.get());
    if (!jsonl->kept_previous().empty()) {
      console.OnMessage(absl::StrCat("metrics: ", config->metrics_jsonl(),
                                     " (the earlier run's file is kept as ",
                                     jsonl->kept_previous(), ")"));
    }
  }
  std::unique_ptr<tensorboard::TensorBoardSink> board;
  if (rank0 && !config->tensorboard_dir().empty()) {
    auto sink = tensorboard::TensorBoardSink::Create(config->tensorboard_dir(),
                                                     config->log_every());
    if (!sink.ok()) {
      return Fail(absl::Status(sink.status().code(),
                               absl::StrCat("--tensorboard_dir: ", sink.status().message())));
    }
    board = std::move(*sink);
    sinks.Add(board.get());
    console.OnMessage(absl::StrCat("tensorboard: writing ", board->path(),
                                   " (view: tensorboard --logdir=",
                                   config->tensorboard_dir(), ")"));
  }
  RunHeader header = MakeRunHeader(*config, **trainer, registry, targets_per_example,
                                   resumed_from);
  header.precision_probe = probe_lines;
  if (ranks != nullptr) {
    header.ranks = ranks->world_size();
    header.samples_per_step *= header.ranks;
  }
  sinks.OnStart(header);
  if (auto s = sinks.status(); !s.ok()) return Fail(s);

  // Ctrl-C / SIGTERM from here on: the step in flight finishes, a
  // checkpoint is saved, and the run ends with 128 + the signal.
  InstallStopSignalHandlers();
  (*trainer)->set_stop_check(PendingStopSignal);
  if (auto s = (*trainer)->Train(&sinks); !s.ok()) {
    // --debug_overflow: the ops that led there, above the one error line.
    if (const std::string report = (*trainer)->debug_overflow_report(); !report.empty()) {
      std::fputs(report.c_str(), stderr);
    }
    // The log's last record says why the run ended.
    sinks.OnError(std::string(s.message()));
    return Fail(s);
  }
  const FinalReport report = (*trainer)->Report();
  sinks.OnFinish(report);
  std::fputs(FormatFinalReport(report).c_str(), stdout);
  if (report.ranks > 1 && report.train_seconds > 0) {
    std::fprintf(stdout,
                 "data parallel: %d ranks; rank 0 spent %.3f s in %lld collective calls "
                 "(%.1f%% of its training time); %lld of %lld gradient buckets issued during "
                 "backward, %lld started (running while the trainer went on)\n",
                 report.ranks, report.collective_seconds,
                 static_cast<long long>(report.collective_calls),
                 100.0 * report.collective_seconds / report.train_seconds,
                 static_cast<long long>(report.buckets_in_backward),
                 static_cast<long long>(report.buckets_exchanged),
                 static_cast<long long>(report.buckets_started));
  }
  // The summary record is the last write: a log that lost it fails the run.
  if (auto s = sinks.status(); !s.ok()) return Fail(s);
  if (const int sig = (*trainer)->stopped_by_signal(); sig != 0) {
    const std::string saved =
        config->checkpoint_dir().empty()
            ? std::string("no checkpoint was saved (the run has no --checkpoint_dir)")
            : absl::StrCat("its checkpoint is ", LatestCheckpointPath(config->checkpoint_dir()),
                           "; continue with the same flags and --resume");
    std::fprintf(stdout, "mantissa: interrupted by %s at step %lld of %lld: %s\n",
                 StopSignalName(sig), static_cast<long long>((*trainer)->step()),
                 static_cast<long long>(config->steps()), saved.c_str());
    return 128 + sig;
  }
  return 0;
}

}  // namespace
}  // namespace mnt::trainer

int main(int argc, char** argv) {
  // Line-buffered even into a pipe or file: `| tee`, nohup and CI logs show
  // each line as it is printed, and a killed run keeps its log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return mnt::trainer::Run(argc, argv);
}

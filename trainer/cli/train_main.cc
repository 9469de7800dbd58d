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
#include <system_error>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainer/cli/auto_batch.h"
#include "trainer/cli/data_flags.h"
#include "trainer/cli/dry_run.h"
#include "trainer/core/lora_flag.h"
#include "trainer/cli/eval_only.h"
#include "trainer/cli/help.h"
#include "trainer/cli/precision_probe.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/cli/model_defaults.h"
#include "trainer/cli/run_folder_choice.h"
#include "trainer/cli/run_header.h"
#include "trainer/cli/run_plan.h"
#include "trainer/cli/run_schedule.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/cli/user_directory.h"
#include "trainer/config/command_line_check.h"
#include "trainer/config/config.h"
#include "trainer/config/flags.h"
#include "trainer/core/console_reporter.h"
#include "trainer/core/device_choice.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/checkpoint/run_folder.h"
#include "trainer/config/user_path.h"
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
// The folder rank 0 claimed for this run's checkpoints (and holds locked).
WriteFolder g_write_folder;

int Fail(const absl::Status& s) {
  // A run that fails before saving anything leaves no folder behind.
  ReleaseWriteFolder(&g_write_folder);
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

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && std::filesystem::equivalent(a, b, ec) && !ec;
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
// absl's bool --resume takes only true/false. `--batch_size=auto` (and
// Hugging Face's spelling) as --auto_batch_size: the integer flag stays one.
std::vector<char*> ExpandResumeIfExists(int argc, char** argv) {
  static char resume[] = "--resume";
  static char if_exists[] = "--resume_if_exists";
  static char auto_batch[] = "--auto_batch_size";
  std::vector<char*> out;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--resume=if_exists") {
      out.push_back(resume);
      out.push_back(if_exists);
    } else if (i > 0 && (std::string(argv[i]) == "--batch_size=auto" ||
                         std::string(argv[i]) == "--per_device_train_batch_size=auto")) {
      out.push_back(auto_batch);
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
  auto given = ConfigFromFlags();
  // A resumed run's flags change its saved config, and may be valid only
  // over it (--optimizer_options=min_8bit_size=... for the run's adamw8bit,
  // where the default --optimizer takes none): checked over the saved
  // config below, and alone only when there is none to resume.
  absl::Status unchecked;
  if (!given.ok()) {
    auto merged = UncheckedConfigFromFlags();
    if (merged.ok() && (merged->resume() || !merged->resume_from().empty())) {
      unchecked = given.status();
      given = *std::move(merged);
    }
  }
  if (!given.ok()) return Fail(given.status());

  PluginRegistry registry(
      PluginRegistry::DefaultSearchPath(given->plugin_path(), argv[0]));
  registry.set_verbose_errors(absl::GetFlag(FLAGS_verbose));
  auto device = ResolveDevice(given->device(), &registry);
  if (!device.ok()) return Fail(device.status());
  // Data parallel: one process per rank, launched by mpirun or srun. Only
  // rank 0 prints and writes logs and checkpoints (trainer/parallel/).
  const Launch launch = DetectLaunch();
  const int64_t world =
      launch.world_size > 1 && given->data_parallel() != "off" ? launch.world_size : 1;

  // A resumed run is the same run: its folder's saved config fills every
  // field this command does not give (run_folder_choice.h).
  const std::string runs_parent =
      absl::StrCat(given->data().cache_dir().empty() ? DefaultCacheDir()
                                                     : given->data().cache_dir(),
                   "/runs");
  // The default folder's name is the model, dataset and precision as the
  // run will resolve them (--model=mlp alone trains on digits).
  TrainConfig named = *given;
  const std::string implied_for_name = ApplyDatasetOfDataFlags(FieldChosenByUser, &named);
  ApplyModelDefaults(*device,
                     [&](const std::string& flag) {
                       return FieldChosenByUser(flag) ||
                              (flag == "dataset" && !implied_for_name.empty());
                     },
                     &named);
  const std::string default_base = DefaultRunFolderBase(
      named,
      given->precision() == "auto" ? std::string("auto")
                                   : ResolvePrecision(given->precision(), *device),
      world);
  auto resume = ChooseResumeFolder(*given, runs_parent, default_base);
  if (!resume.ok()) return Fail(resume.status());
  std::optional<TrainConfig> saved;
  absl::StatusOr<TrainConfig> config = *given;
  if (resume->folder.has_value() && !resume->folder->config_path.empty()) {
    auto read = ReadRunConfig(*resume->folder);
    if (!read.ok()) return Fail(read.status());
    saved = *read;
    config = ConfigFromFlagsOver(*saved);
    if (!config.ok()) return Fail(config.status());
    // It goes on in its own folder unless this command names another.
    if (!FieldChosenByUser("checkpoint_dir") && !FieldChosenByUser("run_name")) {
      config->set_checkpoint_dir(resume->folder->dir);
    }
  } else if (!unchecked.ok()) {
    return Fail(unchecked);
  }
  // What this command chose itself; a --config that is the resumed run's
  // own saved file chooses nothing new.
  const bool config_is_saved =
      saved.has_value() && SameFile(ExpandUserPath(absl::GetFlag(FLAGS_config)),
                                    resume->folder->config_path);
  const ChosenNow chosen_now = [&](const std::string& flag) {
    return config_is_saved ? FlagGivenOnCommandLine(flag) : FieldChosenByUser(flag);
  };
  auto device_now = ResolveDevice(config->device(), &registry);
  if (!device_now.ok()) return Fail(device_now.status());
  config->set_device(*device_now);
  // Model and device defaults fill in what neither the command line nor the
  // --config file chose (a resumed run's saved config chose everything).
  std::vector<std::string> defaults;
  if (!saved.has_value()) {
    const std::string implied = ApplyDatasetOfDataFlags(FieldChosenByUser, &*config);
    if (!implied.empty()) defaults.push_back(implied);
    // A dataset the data flags chose is the user's choice too.
    const auto chosen = [&](const std::string& flag) {
      return FieldChosenByUser(flag) || (flag == "dataset" && !implied.empty());
    };
    for (std::string& d : ApplyModelDefaults(*device_now, chosen, &*config)) {
      defaults.push_back(std::move(d));
    }
    ApplyScheduleDefaults(FieldChosenByUser, &*config);
  }
  if (auto s = ValidateTrainConfig(*config); !s.ok()) return Fail(s);
  if (auto s = CheckDataFlagsFitDataset(*config); !s.ok()) return Fail(s);
  if (auto s = CheckModelTakesDataset(*config, &registry); !s.ok()) return Fail(s);
  // The global batch: kept from the saved run on any number of ranks.
  std::vector<std::string> plan_lines;
  if (saved.has_value()) {
    auto lines = ResolveResumedPlan(*saved, chosen_now, world, &*config);
    if (!lines.ok()) return Fail(lines.status());
    plan_lines = std::move(*lines);
  } else if (auto s = ResolveGlobalBatch(chosen_now, world, &*config); !s.ok()) {
    return Fail(s);
  }
  std::unique_ptr<HostComm> ranks;
  if (world > 1) {
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
  if (config->eval_only() && !resume->folder.has_value()) {
    return Fail(absl::InvalidArgumentError(
        "--eval_only needs a checkpoint to evaluate: --resume_from=<run folder or checkpoint "
        "file>, or --resume (the run's own folder, or --checkpoint_dir / --run_name)"));
  }
  if (config->gradient_checkpointing() &&
      !absl::StrContains(absl::StrCat(",", config->model_options()), ",checkpointing=")) {
    // The model owns recomputation; the flag is its option.
    const std::string& o = config->model_options();
    config->set_model_options(o.empty() ? "checkpointing=1"
                                        : o + ",checkpointing=1");
  }
  if (!config->lora().empty()) {
    // The model adds the adapters (its lora_* options, ABI 1.13's
    // MODEL_LORA); the trainer freezes everything else, as PEFT does.
    auto lora = LoraModelOptions(config->lora());
    if (!lora.ok()) return Fail(lora.status());
    const std::string& o = config->model_options();
    if (!absl::StrContains(absl::StrCat(",", o), ",lora_r=")) {
      config->set_model_options(o.empty() ? *lora : absl::StrCat(o, ",", *lora));
    }
    const std::string& f = config->freeze();
    if (!absl::StrContains(absl::StrCat(",", f, ","), absl::StrCat(",", kLoraFreezePattern, ","))) {
      config->set_freeze(f.empty() ? kLoraFreezePattern : absl::StrCat(f, ",", kLoraFreezePattern));
    }
  }

  // The folder this run writes: rank 0 claims it (a fresh default name, or
  // the one given, refused when it holds another run's work) and holds its
  // lock; every rank learns it.
  if (config->eval_only() || config->dry_run()) {
    config->set_checkpoint_dir("");
  } else {
    std::string dir;
    if (rank0) {
      auto claimed = ClaimWriteFolder(*config, resume->folder, runs_parent, default_base);
      if (!claimed.ok()) return Fail(claimed.status());
      g_write_folder = std::move(*claimed);
      dir = g_write_folder.dir;
    }
    if (ranks != nullptr) {
      if (auto s = ranks->Broadcast(&dir); !s.ok()) return Fail(s);
    }
    config->set_checkpoint_dir(dir);
    // --report_to's logs and --save_best go in the folder.
    if (auto s = ResolveRunOutputs(&*config); !s.ok()) return Fail(s);
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
  // --batch_size=auto: the batch from the memory estimate (auto_batch.h),
  // rank 0's choice on every rank (their free memory may differ).
  if (config->auto_batch_size()) {
    if (chosen_now("batch_size")) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "--batch_size=auto and --batch_size=", config->batch_size(), " disagree; give one")));
    }
    std::string plan;
    if (rank0) {
      AutoBatchRequest request;
      request.ranks = world;
      request.spec = data->train->spec();
      request.train_examples = data->train->size();
      request.keep_global = chosen_now("global_batch_size") || saved.has_value();
      request.accum_chosen = chosen_now("grad_accum_steps");
      auto line = ResolveAutoBatch(request, &registry, &*config);
      if (!line.ok()) return Fail(line.status());
      std::fprintf(stdout, "%s\n", line->c_str());
      plan = absl::StrCat(config->batch_size(), " ", config->grad_accum_steps());
    }
    if (ranks != nullptr) {
      if (auto s = ranks->Broadcast(&plan); !s.ok()) return Fail(s);
      const std::vector<std::string> parts = absl::StrSplit(plan, ' ');
      int64_t batch = 0, accum = 0;
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &batch) ||
          !absl::SimpleAtoi(parts[1], &accum)) {
        return Fail(absl::InternalError(absl::StrCat("rank 0's batch plan '", plan, "'")));
      }
      config->set_batch_size(batch);
      config->set_grad_accum_steps(accum);
      config->set_global_batch_size(batch * accum * world);
      config->set_auto_batch_size(false);
    }
  }
  auto epochs_note =
      ResolveEpochs(data->train->size(), ranks != nullptr ? ranks->world_size() : 1, &*config);
  if (!epochs_note.ok()) return Fail(epochs_note.status());
  // A subword model goes with the run's checkpoints (run_config_file.h).
  if (!data->tokenizer_model.empty()) {
    config->mutable_data()->set_tokenizer_model(data->tokenizer_model);
  }

  // --dry_run: what the run would take, and nothing else.
  if (config->dry_run()) {
    if (auto s = PrintDryRun(*config, &registry, world, data->train->spec(), stdout); !s.ok())
      return Fail(s);
    return 0;
  }

  // --precision=auto: a resumed run keeps its checkpoint's precision; a new
  // one measures (trainer/cli/precision_probe.h), once the data is known to
  // load and the run's steps are known (--num_train_epochs).
  std::vector<std::string> probe_lines;
  if (config->precision() == "auto") {
    if (resume->folder.has_value()) {
      // A folder saved before its config was: the checkpoint says.
      auto ckpt = ReadCheckpoint(resume->folder->checkpoint);
      if (!ckpt.ok()) return Fail(ckpt.status());
      config->set_precision(ckpt->precision());
      std::fprintf(stdout, "precision: %s (the checkpoint's; --precision=auto)\n",
                   ckpt->precision().c_str());
    } else {
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
    console.OnMessage(absl::StrCat("defaults for ", config->model(), " on ", *device_now,
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

  if (!resume->note.empty()) console.OnMessage(resume->note);
  const std::string resumed_from =
      resume->folder.has_value() ? resume->folder->checkpoint : std::string();
  if (!resumed_from.empty()) {
    if (auto s = (*trainer)->RestoreCheckpoint(resumed_from); !s.ok()) {
      // A folder saved before runs kept their config: point at the file.
      const std::string config_file = (std::filesystem::path(resumed_from).parent_path() /
                                       kRunConfigFileName).string();
      if (!saved.has_value() && absl::GetFlag(FLAGS_config).empty() &&
          std::filesystem::exists(config_file)) {
        return Fail(absl::Status(s.code(), absl::StrCat(s.message(), " (the run's config is ",
                                                        config_file, ": add --config=",
                                                        config_file, ")")));
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
      ReleaseWriteFolder(&g_write_folder);
      return 0;
    }
    // Scripts read this line: it ends with the step.
    console.OnMessage(absl::StrCat("resumed from ", resumed_from, " at step ",
                                   (*trainer)->step()));
    for (const std::string& line : plan_lines) console.OnMessage(line);
    if (!(*trainer)->restore_note().empty()) console.OnMessage((*trainer)->restore_note());
  }
  if (rank0 && g_write_folder.replaced.holds_run()) {
    // --overwrite_output_dir: the other run's files go now that this one
    // has started, not before (a run that fails to start changes nothing).
    auto removed = ClearRunFolder(g_write_folder.dir);
    if (!removed.ok()) return Fail(removed.status());
    console.OnMessage(absl::StrCat("--overwrite_output_dir: removed the earlier run's ",
                                   absl::StrJoin(*removed, ", "), " from ",
                                   g_write_folder.dir));
  }
  if (!config->checkpoint_dir().empty()) {
    console.OnMessage(absl::StrCat(
        "checkpoints: ", config->checkpoint_dir(),
        !g_write_folder.default_name
            ? ""
            : absl::StrCat(" (this run's own folder",
                           config->checkpoint_dir() != absl::StrCat(runs_parent, "/", default_base)
                               ? absl::StrCat(": ", default_base, " holds another run")
                               : "",
                           "; --run_name or --checkpoint_dir choose another, "
                           "--checkpoint_dir=none keeps none)")));
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
                           "; continue with: train --resume_from=", config->checkpoint_dir());
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

// The train binary as a user runs it: bad flags, missing data, unknown
// plugins and a plugin failing mid-step all end with a non-zero exit code and
// exactly one line on stderr; a good run exits 0 and writes its metrics.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::TempDir;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

CliResult RunTrain(const std::string& args) {
  static int n = 0;
  const std::string out = TempDir() + "/cli_out_" + std::to_string(n) + ".txt";
  const std::string err = TempDir() + "/cli_err_" + std::to_string(n++) + ".txt";
  const std::string binary = RunfilesRoot() + "/mantissa/trainer/cli/train";
  // Converted datasets go to the test's own cache. The MLP on digits unless
  // `args` says otherwise (later flags win).
  const std::string cmd = binary + " --progress=plain --model=mlp --dataset=digits"
                          " --cache_dir=" + TempDir() + "/cache " + args + " >" +
                          out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

// Exactly one non-empty line on stderr, and it is ours.
void ExpectOneLineError(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "stderr:\n" << r.err;
  EXPECT_EQ(err.rfind("mantissa: error: ", 0), 0u) << "stderr:\n" << r.err;
  EXPECT_NE(err.find(needle), std::string::npos) << "stderr:\n" << r.err;
}

TEST(CliTest, DefaultRunTrainsAndWritesMetrics) {
  const std::string jsonl = TempDir() + "/metrics.jsonl";
  CliResult r = RunTrain("--steps=60 --eval_every=30 --metrics_jsonl=" + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("== Mantissa run report =="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activations"), std::string::npos);
  const std::string metrics = Slurp(jsonl);
  int train_lines = 0, eval_lines = 0;
  for (absl::string_view line : absl::StrSplit(metrics, '\n', absl::SkipEmpty())) {
    train_lines += line.find("\"type\":\"train\"") != absl::string_view::npos;
    eval_lines += line.find("\"type\":\"eval\"") != absl::string_view::npos;
  }
  EXPECT_EQ(train_lines, 60);
  EXPECT_EQ(eval_lines, 2);
}

// The value of `"key":` in one JSON line, up to the next ',' or '}'.
std::string JsonField(absl::string_view line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  if (at == absl::string_view::npos) return "";
  const size_t start = at + k.size();
  return std::string(line.substr(start, line.find_first_of(",}", start) - start));
}

// `--precision=fp16 --precision_options=hysteresis=2` as a user types it,
// with the scale on the device and on the host: an initial scale that
// overflows fp16 (2^40) makes consecutive overflows; the first overflow of a
// run (after a clean step, or the run's first step) is skipped without a
// backoff, the second in a row halves the scale (DeepSpeed's hysteresis:
// each further one in the same run halves it too, until a clean step resets
// it); both paths write the same steps (step, loss, scale, skip, grad norm)
// bit for bit and say which path they took.
TEST(CliTest, Fp16HysteresisTwoOnTheDeviceAndOnTheHost) {
  std::vector<std::string> steps[2];
  for (int on = 0; on < 2; ++on) {
    const std::string jsonl = TempDir() + "/hysteresis_" + (on ? "on" : "off") + ".jsonl";
    CliResult r = RunTrain(std::string("--precision=fp16 --precision_options=hysteresis=2 "
                                       "--device_loss_scaling=") +
                           (on ? "on" : "off") +
                           " --init_scale=1099511627776 --growth_interval=3 --steps=40"
                           " --eval_every=0 --metrics_jsonl=" + jsonl);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(on ? "loss scaling: on the device" : "loss scaling: on the host"),
              std::string::npos)
        << r.out;
    // The JSONL run record says the same, for plugin authors and scripts.
    const std::string run = Slurp(jsonl).substr(0, Slurp(jsonl).find('\n'));
    EXPECT_NE(run.find(on ? "\"loss_scaling\":\"device\"" : "\"loss_scaling\":\"host\""),
              std::string::npos)
        << run;
    EXPECT_NE(run.find("\"loss_scaling_reason\":\"loss scaling: on the"), std::string::npos)
        << run;
    std::vector<double> scale;
    std::vector<bool> skipped;
    for (absl::string_view line : absl::StrSplit(Slurp(jsonl), '\n', absl::SkipEmpty())) {
      if (line.find("\"type\":\"train\"") == absl::string_view::npos) continue;
      steps[on].push_back(absl::StrCat(JsonField(line, "step"), " ", JsonField(line, "loss"), " ",
                                       JsonField(line, "loss_scale"), " ",
                                       JsonField(line, "skipped"), " ",
                                       JsonField(line, "grad_norm")));
      scale.push_back(std::strtod(JsonField(line, "loss_scale").c_str(), nullptr));
      skipped.push_back(JsonField(line, "skipped") == "true");
    }
    ASSERT_EQ(scale.size(), 40u);
    // The scale a step uses, from the step before: an overflow after a clean
    // step (or at the start) keeps it, one right after an overflow halves it;
    // a clean step never halves it.
    int kept = 0, halved = 0;
    for (size_t i = 1; i < scale.size(); ++i) {
      if (!skipped[i - 1]) {
        EXPECT_GE(scale[i], scale[i - 1]) << "step " << i + 1;
        continue;
      }
      const bool second_in_a_row = i >= 2 ? skipped[i - 2] : false;
      if (i == 1 || !second_in_a_row) {
        EXPECT_EQ(scale[i], scale[i - 1]) << "step " << i + 1 << ": a first overflow backed off";
        ++kept;
      } else {
        EXPECT_EQ(scale[i], scale[i - 1] / 2) << "step " << i + 1;
        ++halved;
      }
    }
    EXPECT_TRUE(skipped[0] && skipped[1] && skipped[2]);
    EXPECT_EQ(scale[1], scale[0]);      // the first overflow: kept
    EXPECT_EQ(scale[2], scale[0] / 2);  // the second in a row: halved
    EXPECT_GT(kept, 1) << "no isolated overflow after growth";
    EXPECT_GT(halved, 5);
  }
  EXPECT_EQ(steps[0], steps[1]) << "the device and host paths differ";
}

TEST(CliTest, BadFlagValues) {
  ExpectOneLineError(RunTrain("--precision=fp4"), "unknown precision 'fp4'");
  ExpectOneLineError(RunTrain("--batch_size=0"), "batch_size");
  ExpectOneLineError(RunTrain("--lr=-1"), "lr");
  ExpectOneLineError(RunTrain("--optimizer=lion"), "optimizer");
  ExpectOneLineError(RunTrain("stray_argument"), "stray_argument");
  ExpectOneLineError(RunTrain("--model_options=hidden=abc"), "hidden");
}

TEST(CliTest, BadConfigFile) {
  const std::string cfg = TempDir() + "/bad.textproto";
  std::ofstream(cfg) << "steps: 10\nno_such_field: 3\n";
  ExpectOneLineError(RunTrain("--config=" + cfg), "no_such_field");
  ExpectOneLineError(RunTrain("--config=" + TempDir() + "/none.textproto"),
                     "none.textproto");
}

TEST(CliTest, MissingOrCorruptData) {
  ExpectOneLineError(RunTrain("--dataset=idx --train_images=/nonexistent/x.idx "
                              "--train_labels=/nonexistent/y.idx"),
                     "/nonexistent/x.idx");
  const std::string garbage = TempDir() + "/garbage.idx";
  std::ofstream(garbage) << "definitely not an IDX file";
  ExpectOneLineError(
      RunTrain("--dataset=idx --train_images=" + garbage + " --train_labels=" + garbage),
      "garbage.idx");
  ExpectOneLineError(RunTrain("--model=gpt2 --dataset=text --text_path=/nonexistent/t.txt"),
                     "/nonexistent/t.txt");
}

TEST(CliTest, ImageModelsPickTheirDatasetWhenNoneIsGiven) {
  // Without RunTrain's --model=mlp --dataset=digits: `--model=cnn` alone.
  const std::string out = TempDir() + "/cnn_defaults_out.txt";
  const std::string cmd = RunfilesRoot() + "/mantissa/trainer/cli/train --progress=plain"
                          " --cache_dir=" + TempDir() + "/cache --model=cnn --steps=3"
                          " --eval_every=0 >" + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string text = Slurp(out);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("defaults for cnn on cpu: --dataset=digits --lr=0.003"),
            std::string::npos) << text;
  EXPECT_NE(text.find("scikit-learn digits"), std::string::npos) << text;
}

TEST(CliTest, UnknownPlugins) {
  ExpectOneLineError(RunTrain("--model=transformer9000"), "transformer9000");
  ExpectOneLineError(RunTrain("--device=tpu"), "tpu");
  // A typo gets its name and the list; the search path only with --verbose.
  CliResult typo = RunTrain("--model=gtp2");
  ExpectOneLineError(typo, "unknown model 'gtp2'; did you mean 'gpt2'? (available: cnn, gpt2, mlp;");
  EXPECT_EQ(typo.err.find("searched for"), std::string::npos) << typo.err;
  ExpectOneLineError(RunTrain("--device=cdua"), "did you mean 'cuda'?");
  // No usable GPU: the error says what to do instead (on a GPU machine the
  // run simply works).
  CliResult cuda = RunTrain("--device=cuda --steps=1");
  if (cuda.exit_code != 0) {
    ExpectOneLineError(cuda, "; train on the CPU with --device=cpu, or use --device=auto");
  }
  ExpectOneLineError(RunTrain("--precision=bf61 --verbose"),
                     "did you mean 'bf16'? (available: bf16, fp16, fp32, fp8, tf32; searched for "
                     "mnt_precision_bf61.so in: ");
}

TEST(CliTest, VersionNamesTheReleaseAndTheCommit) {
  CliResult r = RunTrain("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The release from //:VERSION, the commit of the checkout it was built
  // from (tools/workspace_status.sh), the plugin ABI.
  EXPECT_TRUE(std::regex_match(
      r.out, std::regex("train \\(Mantissa\\) [0-9]+\\.[0-9]+\\.[0-9]+, commit "
                        "([0-9a-f]{7,40}(\\+local-changes)?|unknown), plugin ABI 1\\.[0-9]+\n")))
      << r.out;
}

TEST(CliTest, PluginErrorMidStepEndsTheRunWithItsMessage) {
  // The flaky test backend (tests/abi) is the CPU backend failing its 50th
  // kernel launch (a precision given: auto's probe would meet it first).
  const std::string jsonl = TempDir() + "/plugin_error.jsonl";
  CliResult r = RunTrain("--device=flaky --precision=fp32 --backend_options=fail_after=50 "
                         "--steps=100 --metrics_jsonl=" + jsonl);
  ExpectOneLineError(r, "injected failure");
  EXPECT_NE(r.err.find("step "), std::string::npos) << r.err;
  // The log ends with the error, so a reader can tell it from a kill.
  std::string log = Slurp(jsonl);
  while (!log.empty() && log.back() == '\n') log.pop_back();
  const std::string last = log.substr(log.rfind('\n') + 1);
  EXPECT_NE(last.find("\"type\":\"error\""), std::string::npos) << last;
  EXPECT_NE(last.find("injected failure"), std::string::npos) << last;
}

TEST(CliTest, EveryErrorThatStopsARunMidWayNamesTheStep) {
  // The flaky backend fails its Nth kernel launch, for N swept across a
  // short run that evaluates and checkpoints every step: whatever the call
  // hit (a step, an evaluation, a checkpoint's device reads, the loss
  // scaler's sync), once training has started the one error line names the
  // step (issue #35 item 5).
  int started = 0;
  for (int fail_after = 5; fail_after < 400; fail_after += 9) {
    const std::string dir = TempDir() + "/flaky_step_" + std::to_string(fail_after);
    CliResult r = RunTrain("--device=flaky --precision=fp16 --steps=4 --eval_every=1 "
                           "--eval_batches=1 --checkpoint_every=1 --checkpoint_dir=" + dir +
                           " --backend_options=fail_after=" + std::to_string(fail_after));
    if (r.exit_code == 0) break;  // past the run's last call
    if (r.out.find("mantissa: flaky backend") == std::string::npos) continue;  // at start
    ++started;
    SCOPED_TRACE("fail_after=" + std::to_string(fail_after));
    ExpectOneLineError(r, "injected failure");
    EXPECT_TRUE(std::regex_search(r.err, std::regex("^mantissa: error: step [1-4]: "))) << r.err;
  }
  EXPECT_GT(started, 10);  // the sweep reached into the run
}

TEST(CliTest, SlowPathsTheBackendReportsReachTheReportAndTheJsonl) {
  // ABI 1.8: a backend's slow paths (the flaky test backend reports every
  // Backend_Run as one) end up in the console report and the JSONL summary.
  const std::string jsonl = TempDir() + "/slow_paths.jsonl";
  CliResult r = RunTrain("--device=flaky --backend_options=report_slow_paths=1 --steps=3"
                         " --eval_every=0 --metrics_jsonl=" + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("slow paths the backend took"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" x injected slow path: every Backend_Run"), std::string::npos) << r.out;
  const std::string log = Slurp(jsonl);
  EXPECT_NE(log.find("\"slow_paths\":[\""), std::string::npos) << log;
  EXPECT_NE(log.find(" x injected slow path: every Backend_Run\"]"), std::string::npos) << log;
  // A backend that reports none (the cpu backend with a fixed thread count:
  // by default, on a busy machine, it reports steps run on fewer threads):
  // an empty list, no report section.
  CliResult quiet = RunTrain("--steps=2 --eval_every=0 --backend_options=threads=1 "
                             "--metrics_jsonl=" + jsonl);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out.find("slow paths"), std::string::npos) << quiet.out;
  EXPECT_NE(Slurp(jsonl).find("\"slow_paths\":[]"), std::string::npos);
}

TEST(CliTest, NanLossStopsWithTheStepNumber) {
  CliResult r = RunTrain("--precision=fp32 --lr=1e30 --clip_grad_norm=0 "
                         "--warmup_steps=0 --steps=50");
  ExpectOneLineError(r, "step ");
  EXPECT_NE(r.err.find("loss is"), std::string::npos) << r.err;
}

TEST(CliTest, ResumeContinuesFromTheCheckpoint) {
  const std::string dir = TempDir() + "/ckpt_cli";
  CliResult a = RunTrain("--steps=20 --checkpoint_dir=" + dir);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  CliResult b = RunTrain("--steps=30 --resume --checkpoint_dir=" + dir);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("resumed from"), std::string::npos) << b.out;
  // A corrupt checkpoint is refused, and left as it was.
  std::ofstream(dir + "/latest", std::ios::binary | std::ios::trunc) << "MNTCKPT";
  ExpectOneLineError(RunTrain("--steps=40 --resume --checkpoint_dir=" + dir), "latest");
  EXPECT_EQ(Slurp(dir + "/latest"), "MNTCKPT");
}

}  // namespace
}  // namespace mnt::trainer

namespace mnt::trainer {
namespace {

// The last "eval_loss" value of a JSONL file, as written.
std::string LastEvalLoss(const std::string& jsonl) {
  const std::string log = Slurp(jsonl);
  const size_t at = log.rfind("\"eval_loss\":");
  if (at == std::string::npos) return "";
  return log.substr(at, log.find(',', at) - at);
}

TEST(EvalOnlyTest, TheSavedConfigEvaluatesTheCheckpointAsTrainingDid) {
  const std::string dir = TempDir() + "/eval_only_run";
  const std::string train_log = TempDir() + "/eval_only_train.jsonl";
  CliResult trained = RunTrain("--steps=30 --checkpoint_dir=" + dir + " --metrics_jsonl=" +
                               train_log);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const std::string config = dir + "/train_config.txtpb";
  EXPECT_NE(trained.out.find("its config: " + config + ", which train --resume_from=" + dir +
                             " reads back"),
            std::string::npos) << trained.out;
  const std::string saved = Slurp(config);
  EXPECT_NE(saved.find("model: \"mlp\""), std::string::npos) << saved;
  // How this invocation started is the next command's choice.
  EXPECT_EQ(saved.find("\nresume"), std::string::npos) << saved;
  EXPECT_EQ(saved.find("\neval_only"), std::string::npos) << saved;
  const std::filesystem::file_time_type before =
      std::filesystem::last_write_time(dir + "/latest");

  // The config read back, the checkpoint evaluated: the same loss training
  // reported at its last step, to the last digit; nothing written.
  const std::string eval_log = TempDir() + "/eval_only_eval.jsonl";
  CliResult eval = RunTrain("--config=" + config + " --resume --eval_only --metrics_jsonl=" +
                            eval_log);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("eval of " + dir + "/latest (step 30): loss "), std::string::npos)
      << eval.out;
  EXPECT_NE(eval.out.find("perplexity "), std::string::npos) << eval.out;
  EXPECT_FALSE(LastEvalLoss(train_log).empty());
  EXPECT_EQ(LastEvalLoss(eval_log), LastEvalLoss(train_log));
  EXPECT_EQ(std::filesystem::last_write_time(dir + "/latest"), before);
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint-31"));

  // A directory with --resume_from works the same without --config.
  CliResult by_dir = RunTrain("--eval_only --resume_from=" + dir);
  ASSERT_EQ(by_dir.exit_code, 0) << by_dir.err;
  EXPECT_NE(by_dir.out.find("(step 30)"), std::string::npos) << by_dir.out;
  // A flag for another model wins over the saved config, and the
  // checkpoint refuses it, naming both.
  ExpectOneLineError(RunTrain("--eval_only --model=cnn --resume_from=" + dir),
                     "it was written with --model=\"mlp\" but this run uses --model=\"cnn\"");
}

TEST(EvalOnlyTest, WithoutACheckpointItIsOneErrorLine) {
  ExpectOneLineError(RunTrain("--eval_only"), "--eval_only needs a checkpoint");
  ExpectOneLineError(RunTrain("--eval_only --resume --checkpoint_dir=" + TempDir() + "/empty"),
                     "--resume: no checkpoint at");
  ExpectOneLineError(
      RunTrain("--eval_only --resume=if_exists --checkpoint_dir=" + TempDir() + "/empty2"),
      "--resume: no checkpoint at");
}

}  // namespace
}  // namespace mnt::trainer

namespace mnt::trainer {
namespace {

TEST(PrecisionProbeTest, AutoMeasuresEveryPrecisionAndSaysWhy) {
  const std::string jsonl = TempDir() + "/probe.jsonl";
  CliResult r = RunTrain("--steps=40 --eval_every=0 --checkpoint_dir=none --metrics_jsonl=" +
                         jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 40 steps: 10% over four precisions is 1 step each, raised to the 3 a
  // timing needs.
  EXPECT_NE(r.out.find("precision probe (--precision=auto): 3 steps each"), std::string::npos)
      << r.out;
  for (const char* p : {"fp32", "tf32", "bf16", "fp16"}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("\n  ") + p +
                                                    " +[0-9.]+ ms/step  loss [0-9.]+  ok")))
        << p << "\n" << r.out;
  }
  std::smatch chosen;
  ASSERT_TRUE(std::regex_search(r.out, chosen, std::regex("\nprecision: (fp32|tf32|bf16|fp16): ")))
      << r.out;
  // The run trains in what the probe chose, and its record keeps the table.
  EXPECT_NE(r.out.find("mantissa: cpu backend, " + chosen[1].str() + " precision"),
            std::string::npos) << r.out;
  const std::string log = Slurp(jsonl);
  EXPECT_NE(log.find("\"precision_probe\":[\"precision probe (--precision=auto): 3 steps each"),
            std::string::npos) << log.substr(0, 2000);
  EXPECT_NE(log.find("\"precision\":\"" + chosen[1].str() + "\""), std::string::npos);
  // A precision given: no probe, an empty list.
  CliResult given = RunTrain("--steps=5 --precision=fp32 --checkpoint_dir=none --metrics_jsonl=" +
                             jsonl);
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(given.out.find("precision probe"), std::string::npos) << given.out;
  EXPECT_NE(Slurp(jsonl).find("\"precision_probe\":[]"), std::string::npos);
}

TEST(PrecisionProbeTest, AResumedAutoRunKeepsItsCheckpointsPrecision) {
  const std::string dir = TempDir() + "/probe_resume";
  CliResult first = RunTrain("--steps=2 --precision=bf16 --checkpoint_dir=" + dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  CliResult again = RunTrain("--steps=4 --resume --checkpoint_dir=" + dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  // The run's saved config says bf16.
  EXPECT_NE(again.out.find("mantissa: cpu backend, bf16 precision"), std::string::npos)
      << again.out;
  EXPECT_EQ(again.out.find("precision probe"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace mnt::trainer

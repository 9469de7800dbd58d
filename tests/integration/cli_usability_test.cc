// What a user coming from Hugging Face, Accelerate or llm.c runs into around
// the loop, through the real train binary: --help, output in a pipe, the
// familiar flags, defaults under --config, a model/dataset mismatch, the
// metrics files.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

extern char** environ;

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;
using testing::RunfilesRoot;
using testing::TempDir;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string Binary() { return RunfilesRoot() + "/mantissa/trainer/cli/train"; }

// `args` as given, plus a cache inside the test's temp dir; `prefix` goes
// before the command (a cd, environment variables).
Result Train(const std::string& args, const std::string& prefix = "") {
  static int n = 0;
  const std::string out = TempDir() + "/u_out_" + std::to_string(n) + ".txt";
  const std::string err = TempDir() + "/u_err_" + std::to_string(n++) + ".txt";
  const std::string cmd = prefix + Binary() + " --device=cpu --cache_dir=" + TempDir() +
                          "/cache " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

void ExpectOneLineError(const Result& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << r.err;
  EXPECT_TRUE(absl::StartsWith(err, "mantissa: error: ")) << r.err;
  EXPECT_TRUE(absl::StrContains(err, needle)) << "wanted '" << needle << "' in " << r.err;
}

const char* kMlp = "--model=mlp --dataset=digits --progress=plain --eval_every=0 ";

TEST(HelpTest, HelpListsEveryTopicAndExitsZero) {
  for (const char* flag : {"--help", "-h", "--helpshort"}) {
    Result r = Train(flag);
    EXPECT_EQ(r.exit_code, 0) << flag;
    EXPECT_FALSE(absl::StrContains(r.out, "No flags matched")) << r.out;
    EXPECT_TRUE(absl::StrContains(r.out, "usage: train [--model=gpt2|mlp|cnn]")) << r.out;
    // fp8 is listed, and auto says it never picks it.
    EXPECT_TRUE(absl::StrContains(r.out, "[--precision=auto|fp32|tf32|bf16|fp16|fp8]")) << r.out;
    for (const char* expected :
         {"Model, precision, device:", "--precision=auto", "fp32|tf32|bf16|fp16|fp8|auto.",
          "(--precision=fp8)", "--bf16=false", "Data:",
          "--dataset=fortunes", "Optimization:", "--lr_scheduler=cosine",
          "--warmup_ratio=0", "Loss scaling (fp16):", "--tensorboard_dir=\"\"",
          "--metrics_jsonl=\"\"", "Files:", "--config=\"\"",
          "e.g. threads=2"}) {
      EXPECT_TRUE(absl::StrContains(r.out, expected)) << flag << ": " << expected;
    }
    EXPECT_FALSE(absl::StrContains(r.out, "--flagfile=")) << flag;
  }
  Result full = Train("--helpfull");
  EXPECT_EQ(full.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(full.out, "--flagfile=")) << full.out;
  Result match = Train("--helpmatch=scale");
  EXPECT_EQ(match.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(match.out, "--init_scale")) << match.out;
  EXPECT_FALSE(absl::StrContains(match.out, "--dataset=")) << match.out;
}

// The first progress line must reach a pipe while the run is still going
// (block buffering held it until exit, so `| tee` showed nothing).
TEST(ConsoleTest, LinesReachAPipeWhileTheRunGoes) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const std::string cache = "--cache_dir=" + TempDir() + "/cache";
  std::vector<std::string> args = {Binary(), "--device=cpu", cache, "--model=mlp",
                                   "--dataset=digits", "--progress=plain",
                                   "--steps=100000000", "--log_every=100000000",
                                   "--eval_every=0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  close(fds[1]);
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!absl::StrContains(seen, "step 1/") && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, n);
  }
  // Still running: the line came through the pipe before any exit flush.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0) << "the run ended early:\n" << seen;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(fds[0]);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_TRUE(absl::StrContains(seen, "step 1/100000000 (0.0%)")) << seen;
  EXPECT_TRUE(absl::StrContains(seen, "eta ")) << seen;
}

TEST(FlagsTest, HuggingFaceNamesWork) {
  const std::string jsonl = TempDir() + "/hf.jsonl";
  Result r = Train(std::string(kMlp) +
                   "--bf16 --steps=20 --lr=0.01 --lr_scheduler=linear --warmup_ratio=0.1 "
                   "--min_lr_ratio=0 --gradient_accumulation_steps=2 --max_grad_norm=0.5 "
                   "--metrics_jsonl=" + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "bf16 precision")) << r.out;
  const std::string metrics = Slurp(jsonl);
  const std::vector<std::string> lines = absl::StrSplit(metrics, '\n', absl::SkipEmpty());
  ASSERT_GT(lines.size(), 20u);
  EXPECT_TRUE(absl::StrContains(lines[0], "\"grad_accum_steps\":\"2\"")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], "\"clip_grad_norm\":0.5")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], "\"kind\":\"linear\"")) << lines[0];
  // ceil(0.1 x 20) = 2 warmup steps, then a straight line from 0.01 to 0.
  EXPECT_TRUE(absl::StrContains(lines[1], "\"lr\":0.005,")) << lines[1];
  EXPECT_TRUE(absl::StrContains(lines[2], "\"lr\":0.01,")) << lines[2];
  // Step 12 uses lr index 11: 9 of the 18 decay steps done.
  EXPECT_TRUE(absl::StrContains(lines[12], "\"lr\":0.005,")) << lines[12];
  ExpectOneLineError(Train(std::string(kMlp) + "--fp16 --precision=bf16"),
                     "--fp16=true disagrees with --precision=bf16");
  ExpectOneLineError(Train(std::string(kMlp) + "--lr_scheduler=step"), "linear");
}

TEST(FlagsTest, HuggingFaceTrainingArgumentsNames) {
  // TrainingArguments' names a user types: the same run as our names.
  const std::string dir = TempDir() + "/hf_out";
  fs::remove_all(dir);
  const std::string jsonl = TempDir() + "/hf_args.jsonl";
  Result r = Train("--model=mlp --dataset=digits --progress=plain "
                   "--max_steps=6 --learning_rate=0.02 --per_device_train_batch_size=16 "
                   "--logging_steps=3 --save_steps=3 --eval_steps=3 --output_dir=" + dir +
                   " --metrics_jsonl=" + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir + "/checkpoint-3")) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/checkpoint-6")) << r.out;
  const std::string header = Slurp(jsonl).substr(0, Slurp(jsonl).find('\n'));
  for (const char* field : {"\"steps\":\"6\"", "\"lr\":0.02", "\"batch_size\":\"16\"",
                            "\"log_every\":\"3\"", "\"eval_every\":\"3\""}) {
    EXPECT_TRUE(absl::StrContains(header, field)) << field << " in " << header;
  }
  ExpectOneLineError(Train(std::string(kMlp) + "--max_steps=5 --steps=7"),
                     "--max_steps=5 disagrees with --steps=7");
}

TEST(DefaultsTest, AConfigWithOnlyTheModelGetsTheModelsDefaults) {
  const std::string cfg = TempDir() + "/only_model.textproto";
  std::ofstream(cfg) << "model: \"mlp\"\n";
  Result r = Train("--progress=plain --eval_every=0 --steps=3 --config=" + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "defaults for mlp on cpu: --dataset=digits")) << r.out;
  // steps came from the command line: not replaced by the model's 600.
  EXPECT_FALSE(absl::StrContains(r.out, "--steps=600")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "step 3/3")) << r.out;

  // A field the file sets, even to the trainer's default, is the user's.
  std::ofstream(cfg) << "model: \"mlp\"\ndata { dataset: \"idx\" }\n";
  ExpectOneLineError(Train("--config=" + cfg), "--dataset=idx needs --train_images");
}

TEST(DefaultsTest, ModelAndDatasetMismatchNamesWhatTheModelTakes) {
  ExpectOneLineError(Train("--model=mlp --dataset=fortunes"),
                     "--model=mlp does not train on --dataset=fortunes: mlp takes labelled "
                     "feature vectors or labelled images (--dataset=digits|idx); for fortunes "
                     "use --model=gpt2");
  ExpectOneLineError(Train("--model=gpt2 --dataset=digits"), "--dataset=fortunes|shards|text");
}

TEST(MetricsTest, EachRunStartsItsOwnFileAndResumeAppends) {
  const std::string dir = TempDir() + "/runs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string jsonl = dir + "/m.jsonl";
  const std::string common = std::string(kMlp) + "--checkpoint_dir=" + dir + "/ckpt " +
                             "--metrics_jsonl=" + jsonl + " ";
  ASSERT_EQ(Train(common + "--steps=4").exit_code, 0);
  Result second = Train(common + "--steps=4 --overwrite_output_dir");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(absl::StrContains(second.out, "kept as " + jsonl + ".1")) << second.out;
  Result resumed = Train(common + "--steps=6 --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::vector<std::string> first = absl::StrSplit(Slurp(jsonl + ".1"), '\n', absl::SkipEmpty());
  const std::vector<std::string> now = absl::StrSplit(Slurp(jsonl), '\n', absl::SkipEmpty());
  int runs = 0, train = 0;
  for (const std::string& l : now) {
    runs += absl::StrContains(l, "\"type\":\"run\"");
    train += absl::StrContains(l, "\"type\":\"train\"");
  }
  EXPECT_EQ(runs, 2);       // the second run, then its resumption
  EXPECT_EQ(train, 4 + 2);  // steps 1-4, then 5-6
  EXPECT_TRUE(absl::StrContains(now.back(), "\"type\":\"summary\""));
  bool resumed_header = false;
  for (const std::string& l : now) {
    resumed_header |= absl::StrContains(l, "\"start_step\":4,") &&
                      absl::StrContains(l, "\"resumed_from\":\"" + dir + "/ckpt/latest\"");
  }
  EXPECT_TRUE(resumed_header) << Slurp(jsonl);
  EXPECT_TRUE(absl::StartsWith(first[0], "{\"type\":\"run\""));
}

TEST(TensorBoardTest, WritesAnEventFileOrRefusesTheDirectory) {
  const std::string dir = TempDir() + "/tb";
  fs::remove_all(dir);
  Result r = Train(std::string(kMlp) + "--steps=3 --tensorboard_dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "tensorboard --logdir=" + dir)) << r.out;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    files += absl::StrContains(e.path().filename().string(), "events.out.tfevents.");
  }
  EXPECT_EQ(files, 1);
  const std::string plain = TempDir() + "/plain_file";
  std::ofstream(plain) << "x";
  ExpectOneLineError(Train(std::string(kMlp) + "--steps=3 --tensorboard_dir=" + plain + "/tb"),
                     "--tensorboard_dir: cannot create TensorBoard directory " + plain + "/tb");
}

TEST(ResumeTest, MainJobResumesFromItsDefaultDirectory) {
  // Every run checkpoints to <cache>/runs/<model>-<dataset>-<precision> by
  // default, the main job too (gpt2 on fortunes, precision auto: the folder
  // says auto, the resumed run takes the checkpoint's precision).
  const std::string small = "--progress=plain --steps=2 --batch_size=4 --seq_len=16 "
                            "--eval_batches=1 --eval_every=0 ";
  Result first = Train(small);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  Result again = Train(small + "--steps=3 --resume");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(absl::StrContains(
      again.out, "resumed from " + TempDir() + "/cache/runs/gpt2-fortunes-auto/latest at step 2"))
      << again.out;
  EXPECT_TRUE(absl::StrContains(again.out, "step 3/3")) << again.out;
}

TEST(ResumeTest, FromAnExplicitCheckpoint) {
  const std::string dir = TempDir() + "/explicit";
  fs::remove_all(dir);
  ASSERT_EQ(Train(std::string(kMlp) + "--steps=4 --checkpoint_dir=" + dir + "/a").exit_code, 0);
  int copy = 0;
  for (const std::string& from : {dir + "/a", dir + "/a/latest"}) {
    Result r = Train(std::string(kMlp) + "--steps=6 --checkpoint_dir=" + dir + "/b" +
                     std::to_string(copy++) + " --resume_from=" + from);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(absl::StrContains(r.out, "resumed from " + dir + "/a/latest at step 4"))
        << r.out;
  }
  // Hugging Face's name, and a path that is not there.
  Result hf = Train(std::string(kMlp) + "--steps=6 --resume_from_checkpoint=" + dir + "/a");
  EXPECT_EQ(hf.exit_code, 0) << hf.err;
  ExpectOneLineError(Train(std::string(kMlp) + "--resume_from=" + dir + "/nope"),
                     dir + "/nope");
  ExpectOneLineError(Train(std::string(kMlp) + "--checkpoint_dir=none --resume"),
                     "--resume is invalid with --checkpoint_dir=none");
}

TEST(ResumeTest, DifferentPrecisionOptionsAreSaid) {
  const std::string dir = TempDir() + "/popts";
  fs::remove_all(dir);
  const std::string args = std::string(kMlp) + "--precision=fp16 --checkpoint_dir=" + dir + " ";
  ASSERT_EQ(Train(args + "--steps=2 --precision_options=hysteresis=2").exit_code, 0);
  Result same = Train(args + "--steps=3 --precision_options=hysteresis=2 --resume");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_FALSE(absl::StrContains(same.out, "precision_options=")) << same.out;
  Result other = Train(args + "--steps=4 --precision_options=hysteresis=3 --resume");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_TRUE(absl::StrContains(
      other.out, "note: the checkpoint was written with --precision_options=\"hysteresis=2\"; "
                 "this run continues with --precision_options=\"hysteresis=3\""))
      << other.out;
}

TEST(ResumeTest, NothingToResumeIsAnErrorUnlessIfExists) {
  const std::string args = std::string(kMlp) + "--steps=3 --run_name=never_trained ";
  const std::string folder = TempDir() + "/cache/runs/never_trained";
  fs::remove_all(folder);
  ExpectOneLineError(Train(args + "--resume"),
                     "--resume: no checkpoint at " + folder + "/latest (--resume=if_exists");
  EXPECT_FALSE(fs::exists(folder + "/latest")) << "a refused run wrote a checkpoint";
  Result fresh = Train(args + "--resume=if_exists");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_TRUE(absl::StrContains(fresh.out, "no checkpoint at " + folder +
                                               "/latest; starting fresh (--resume=if_exists)"))
      << fresh.out;
  // Now there is one: the same command resumes it, and a finished run says
  // there is nothing to do, without touching its logs.
  Result done = Train(args + "--resume=if_exists");
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_TRUE(absl::StrContains(done.out, "nothing to do: " + folder +
                                              "/latest is at step 3 of --steps=3"))
      << done.out;
  EXPECT_FALSE(absl::StrContains(done.out, "samples/s")) << done.out;
  Result more = Train(std::string(kMlp) + "--steps=5 --run_name=never_trained --resume");
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_TRUE(absl::StrContains(more.out, "resumed from " + folder + "/latest at step 3"))
      << more.out;
}

// tools/bazel run starts the binary inside its runfiles tree and names the
// user's directory in BUILD_WORKING_DIRECTORY: relative paths mean that
// directory (the data read, the logs and checkpoints written), and the
// plugins are still found.
TEST(PathsTest, RelativeToWhereBazelRunWasStarted) {
  const std::string user = TempDir() + "/user_dir", elsewhere = TempDir() + "/elsewhere";
  fs::remove_all(user);
  fs::create_directories(user + "/sub");
  fs::create_directories(elsewhere);
  {
    std::ofstream text(user + "/corpus.txt");
    for (int i = 0; i < 200; ++i) text << "the quick brown fox jumps over the lazy dog. ";
  }
  const std::string env = "cd " + elsewhere + " && BUILD_WORKING_DIRECTORY=" + user + "/sub ";
  Result r = Train("--model=gpt2 --dataset=text --text_path=../corpus.txt --steps=2 "
                   "--model_options=n_layer=1,n_head=2,d_model=16,seq_len=8 --seq_len=8 "
                   "--batch_size=2 --eval_every=0 --progress=plain --metrics_jsonl=m.jsonl "
                   "--checkpoint_dir=ck",
                   env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(user + "/sub/m.jsonl"));
  EXPECT_TRUE(fs::exists(user + "/sub/ck/latest"));
  EXPECT_FALSE(fs::exists(elsewhere + "/m.jsonl"));
  ExpectOneLineError(Train("--steps=1", "BUILD_WORKING_DIRECTORY=" + user + "/missing "),
                     "cannot enter the directory the command was started in (" + user +
                         "/missing");
}

TEST(CheckpointTest, EveryRunKeepsItsWorkInAFolderOfItsOwn) {
  const std::string runs = TempDir() + "/cache/runs";
  fs::remove_all(runs + "/mlp-digits-bf16");
  Result r = Train(std::string(kMlp) + "--steps=2 --precision=bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "checkpoints: " + runs + "/mlp-digits-bf16 (this run's"))
      << r.out;
  EXPECT_TRUE(fs::exists(runs + "/mlp-digits-bf16/latest"));
  EXPECT_TRUE(fs::exists(runs + "/mlp-digits-bf16/checkpoint-2"));
  // --run_name picks the folder; --checkpoint_dir=none keeps nothing.
  fs::remove_all(runs + "/my_run");
  ASSERT_EQ(Train(std::string(kMlp) + "--steps=2 --run_name=my_run").exit_code, 0);
  EXPECT_TRUE(fs::exists(runs + "/my_run/latest"));
  fs::remove_all(runs + "/mlp-digits-tf32");
  Result none = Train(std::string(kMlp) + "--steps=2 --precision=tf32 --checkpoint_dir=none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_FALSE(fs::exists(runs + "/mlp-digits-tf32"));
  EXPECT_FALSE(absl::StrContains(none.out, "checkpoint: ")) << none.out;
  ExpectOneLineError(Train(std::string(kMlp) + "--run_name=../x"), "--run_name='../x' must be");
}

TEST(CheckpointTest, StepNumberedFilesLatestAndRetention) {
  const std::string dir = TempDir() + "/history";
  fs::remove_all(dir);
  Result r = Train(std::string(kMlp) + "--steps=10 --checkpoint_every=2 --save_total_limit=2 " +
                   "--checkpoint_dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"checkpoint-10", "checkpoint-8", "latest",
                                      "train_config.txtpb"}));
  EXPECT_EQ(Slurp(dir + "/latest"), Slurp(dir + "/checkpoint-10"));
  EXPECT_TRUE(absl::StrContains(r.out, "checkpoint: " + dir + "/checkpoint-6 (step 6; also " +
                                           dir + "/latest; removed checkpoint-2)"))
      << r.out;
  // Resuming from an older step file.
  Result again = Train(std::string(kMlp) + "--steps=12 --checkpoint_dir=" + dir +
                       " --resume_from=" + dir + "/checkpoint-8");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(absl::StrContains(again.out, "at step 8")) << again.out;
}

TEST(Fp16GuardTest, StaticScaleThatSkipsEveryStepIsAnErrorWithAdvice) {
  Result r = Train(std::string(kMlp) +
                   "--precision=fp16 --loss_scale_mode=static --init_scale=1e30 --steps=40");
  ExpectOneLineError(r, "every one of the first 10 steps was skipped");
  EXPECT_TRUE(absl::StrContains(r.err, "--init_scale")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "--loss_scale_mode=dynamic")) << r.err;
  // A static scale that fits trains as before.
  Result fine = Train(std::string(kMlp) +
                      "--precision=fp16 --loss_scale_mode=static --init_scale=1024 --steps=15");
  EXPECT_EQ(fine.exit_code, 0) << fine.err;
}

TEST(Fp16GuardTest, LongSkippedStretchIsSaidWhileTheRunGoes) {
  // lr 1e30 sends the weights to inf after the first step; from then on
  // every fp16 gradient is non-finite and every step is skipped.
  const std::string jsonl = TempDir() + "/guard.jsonl";
  Result r = Train(std::string(kMlp) +
                   "--precision=fp16 --lr=1e30 --clip_grad_norm=0 --warmup_steps=0 --steps=30 "
                   "--metrics_jsonl=" + jsonl);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "warning: the last 20 steps in a row (steps 2-21) were "
                                       "skipped (non-finite gradients)"))
      << r.out;
  // In the metrics file too, between the steps it was said at.
  const std::string metrics = Slurp(jsonl);
  // (Each skipped step's own message names the parameters; the warning is
  // the one about the stretch.)
  const size_t warning = metrics.find("the last 20 steps in a row");
  ASSERT_NE(warning, std::string::npos);
  EXPECT_NE(metrics.find("\"step\":21,", 0), std::string::npos);
  EXPECT_LT(metrics.find("\"step\":21,"), warning);
  EXPECT_GT(metrics.find("\"step\":22,"), warning);
}

TEST(ThroughputTest, FinalRateLeavesOutEvaluation) {
  const std::string jsonl = TempDir() + "/rate.jsonl";
  // Steps of 8 examples, each followed by an evaluation of all 359
  // validation examples (45 batches): evaluation dominates the wall time, so
  // whether it is counted shows far above the timing noise of a busy machine.
  Result r = Train(std::string("--model=mlp --dataset=digits --progress=plain --steps=30 ") +
                   "--batch_size=8 --eval_every=1 --eval_batches=0 --metrics_jsonl=" + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(Slurp(jsonl), '\n', absl::SkipEmpty());
  auto number = [](const std::string& line, const std::string& key) {
    const size_t at = line.find("\"" + key + "\":");
    EXPECT_NE(at, std::string::npos) << key << " in " << line;
    return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
  };
  double last_elapsed = 0;
  for (const std::string& l : lines) {
    if (absl::StrContains(l, "\"type\":\"train\"")) last_elapsed = number(l, "elapsed");
  }
  const std::string& summary = lines.back();
  const double train_s = number(summary, "train_seconds");
  const double eval_s = number(summary, "eval");  // inside phase_seconds
  ASSERT_GT(train_s, 0);
  ASSERT_GT(eval_s, 0);
  // The last step's elapsed time includes the 29 evaluations before it;
  // the training time leaves them out (counted, it would exceed
  // last_elapsed).
  EXPECT_LT(train_s, last_elapsed - 0.45 * eval_s) << summary;
  EXPECT_NEAR(number(summary, "samples_per_second") * train_s, 30 * 8, 1e-6) << summary;
  EXPECT_TRUE(absl::StrContains(r.out, "training steps only")) << r.out;
}

}  // namespace
}  // namespace mnt::trainer

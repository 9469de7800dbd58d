// Hugging Face Trainer's run plan through the real train binary: its names
// (--lr_scheduler_type, --num_train_epochs, --eval_strategy, --report_to,
// --logging_dir, --resume_from_checkpoint=True), the linear schedule ending
// at 0, the best checkpoint (--save_best), early stopping, and several text
// files for --dataset=text.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/mpi_launch.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;
using testing::ReadWholeFile;
using testing::RunfilesRoot;
using testing::TempDir;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

// The train binary with `args`, a cache inside the test's temp dir; `prefix`
// goes before the command (a cd).
Result Train(const std::string& args, const std::string& prefix = "") {
  static int n = 0;
  const std::string out = TempDir() + "/hf_out_" + std::to_string(n) + ".txt";
  const std::string err = TempDir() + "/hf_err_" + std::to_string(n++) + ".txt";
  const std::string cmd = prefix + RunfilesRoot() + "/mantissa/trainer/cli/train --device=cpu " +
                          "--cache_dir=" + TempDir() + "/cache " + args + " >" + out + " 2>" +
                          err;
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadWholeFile(out);
  r.err = ReadWholeFile(err);
  return r;
}

void ExpectOneLineError(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.out;
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << r.err;
  EXPECT_TRUE(absl::StartsWith(err, "mantissa: error: ")) << r.err;
  EXPECT_TRUE(absl::StrContains(err, needle)) << "wanted '" << needle << "' in " << r.err;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// The number after "key": in a JSON line (the JSONL sink writes numbers that
// read back as the exact double); NaN when absent.
double Number(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

struct Eval {
  int64_t step;
  double loss;
};
std::vector<Eval> Evals(const std::string& jsonl) {
  std::vector<Eval> evals;
  for (const std::string& l : Lines(jsonl)) {
    if (!absl::StartsWith(l, "{\"type\":\"eval\"")) continue;
    evals.push_back({static_cast<int64_t>(Number(l, "step")), Number(l, "eval_loss")});
  }
  return evals;
}

// lr of each train record, by step.
std::vector<double> Rates(const std::string& jsonl) {
  std::vector<double> lr;
  for (const std::string& l : Lines(jsonl)) {
    if (absl::StartsWith(l, "{\"type\":\"train\"")) lr.push_back(Number(l, "lr"));
  }
  return lr;
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_ino == sb.st_ino &&
         sa.st_dev == sb.st_dev;
}

// The training examples the run's "data:" line reports.
int64_t TrainingExamples(const std::string& out) {
  const size_t data = out.find("data: ");
  const size_t comma = out.find(", ", data);
  const size_t space = out.find(' ', comma + 2);
  int64_t n = -1;
  if (data == std::string::npos || comma == std::string::npos ||
      !absl::SimpleAtoi(out.substr(comma + 2, space - comma - 2), &n)) {
    ADD_FAILURE() << "no data line in " << out;
  }
  return n;
}

const char* kMlp = "--model=mlp --dataset=digits --precision=fp32 --progress=plain ";

TEST(HfNamesTest, EveryNewFlagIsInHelpByTopic) {
  Result r = Train("--help");
  ASSERT_EQ(r.exit_code, 0);
  // Listed under a topic, not left for "Other" at the end.
  const std::string other = r.out.substr(std::min(r.out.find("\nOther:"), r.out.size()));
  for (const char* flag : {"--lr_scheduler_type=cosine", "--num_train_epochs=0",
                           "--eval_strategy=steps", "--report_to=\"\"", "--logging_dir=\"\"",
                           "--save_best=false", "--early_stopping_patience=0",
                           "--early_stopping_threshold=0"}) {
    EXPECT_TRUE(absl::StrContains(r.out, flag)) << flag;
    EXPECT_FALSE(absl::StrContains(other, flag)) << flag << " under Other";
  }
  EXPECT_TRUE(absl::StrContains(r.out, "linear 0")) << r.out;
}

// Hugging Face's linear schedule decays to 0; cosine keeps nanoGPT's floor
// of 10%; a given --min_lr_ratio wins.
TEST(ScheduleTest, LinearEndsAtZeroCosineAtTenPercent) {
  const double lr = 0.01;
  const int64_t steps = 20, warmup = 2;  // ceil(0.1 x 20)
  auto expected = [&](const std::string& kind, double floor, int64_t i) {
    if (i < warmup) return lr * static_cast<double>(i + 1) / warmup;
    const double progress = static_cast<double>(i - warmup) / (steps - warmup);
    const double min_lr = lr * floor;
    if (kind == "linear") return lr - (lr - min_lr) * progress;
    return min_lr + 0.5 * (lr - min_lr) * (1 + std::cos(M_PI * progress));
  };
  struct Case {
    std::string flags, kind;
    double floor;
  };
  for (const Case& c : std::vector<Case>{{"--lr_scheduler_type=linear", "linear", 0.0},
                                         {"--schedule=linear", "linear", 0.0},
                                         {"--lr_scheduler=linear", "linear", 0.0},
                                         {"--lr_scheduler_type=linear --min_lr_ratio=0.1",
                                          "linear", 0.1},
                                         {"", "cosine", 0.1}}) {
    const std::string jsonl = TempDir() + "/schedule.jsonl";
    Result r = Train(std::string(kMlp) + "--steps=20 --eval_every=0 --warmup_ratio=0.1 " +
                     "--lr=0.01 --checkpoint_dir=none --metrics_jsonl=" + jsonl + " " + c.flags);
    ASSERT_EQ(r.exit_code, 0) << c.flags << r.err;
    const std::string log = ReadWholeFile(jsonl);
    EXPECT_TRUE(absl::StrContains(log, absl::StrCat("\"kind\":\"", c.kind, "\""))) << c.flags;
    const std::vector<double> rates = Rates(log);
    ASSERT_EQ(rates.size(), 20u) << c.flags;
    for (int64_t i = 0; i < steps; ++i) {
      // The schedule is computed in double on the host: to the last bits.
      EXPECT_NEAR(rates[i], expected(c.kind, c.floor, i), 1e-15)
          << c.flags << " step " << i + 1;
    }
  }
  ExpectOneLineError(Train(std::string(kMlp) + "--lr_scheduler_type=linear --schedule=cosine"),
                     "--lr_scheduler_type=linear disagrees with --schedule=cosine");
}

TEST(EpochsTest, StepsComeFromTheEpochsAndAreSaved) {
  for (int accum : {1, 2}) {
    const std::string dir = FreshDir("epochs");
    const std::string jsonl = dir + "/m.jsonl";
    Result r = Train(std::string(kMlp) + "--num_train_epochs=2 --eval_strategy=epoch " +
                     "--batch_size=64 --gradient_accumulation_steps=" + std::to_string(accum) +
                     " --log_every=1000 --checkpoint_dir=" + dir + "/run --metrics_jsonl=" +
                     jsonl);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const int64_t examples = TrainingExamples(r.out);
    const int64_t global = 64 * accum;
    const int64_t steps = (2 * examples + global - 1) / global;
    EXPECT_TRUE(absl::StrContains(
        r.out, absl::StrCat("--num_train_epochs=2: ", steps, " steps (2 x ", examples,
                            " training examples / ", global, " per step, rounded up)")))
        << r.out;
    EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("step ", steps, "/", steps, " ")))
        << r.out;
    // mlp's model default of 600 steps does not apply to an epoch run.
    EXPECT_FALSE(absl::StrContains(r.out, "--steps=600")) << r.out;
    // What the run saves is the steps it trained.
    EXPECT_TRUE(absl::StrContains(ReadWholeFile(dir + "/run/train_config.txtpb"),
                                  absl::StrCat("\nsteps: ", steps, "\n")));
    // --eval_strategy=epoch: after the step that drew each epoch's last
    // example, and no other.
    const std::vector<Eval> evals = Evals(ReadWholeFile(jsonl));
    ASSERT_EQ(evals.size(), 2u) << ReadWholeFile(jsonl);
    EXPECT_EQ(evals[0].step, (examples + global - 1) / global);
    EXPECT_EQ(evals[1].step, steps);
  }
  ExpectOneLineError(Train(std::string(kMlp) + "--num_train_epochs=2 --max_steps=10"),
                     "--num_train_epochs and --max_steps both set the run's length");
  ExpectOneLineError(Train(std::string(kMlp) + "--num_train_epochs=2 --steps=10"),
                     "--num_train_epochs and --steps both set the run's length");
  ExpectOneLineError(Train(std::string(kMlp) + "--num_train_epochs=-1"),
                     "--num_train_epochs=-1 is invalid");
}

// Two ranks of 32: the epochs are counted in global batches of 64, every
// rank evaluates at the same epoch ends, and early stopping stops both at
// the same step (a rank that went on alone would hang its collectives:
// `timeout` ends that).
TEST(EpochsTest, TwoRanksCountTheGlobalBatch) {
  const std::string dir = FreshDir("epochs_dp");
  const std::string flags = std::string(kMlp) + "--batch_size=32 --log_every=1000 " +
                            "--checkpoint_dir=" + dir + "/run --metrics_jsonl=" + dir +
                            "/m.jsonl ";
  const std::string prefix = "timeout 300 " + mnt::testing::Mpirun(2) + " ";
  Result r = Train(flags + "--num_train_epochs=2 --eval_strategy=epoch", prefix);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const int64_t examples = TrainingExamples(r.out);
  const int64_t steps = (2 * examples + 63) / 64;
  EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("--num_train_epochs=2: ", steps, " steps (2 x ",
                                                    examples, " training examples / 64 per step")))
      << r.out;
  std::vector<Eval> evals = Evals(ReadWholeFile(dir + "/m.jsonl"));
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[0].step, (examples + 63) / 64);
  EXPECT_EQ(evals[1].step, steps);

  fs::remove_all(dir + "/run");
  Result stopped = Train(flags + "--steps=40 --eval_every=5 --early_stopping_patience=1 "
                                 "--early_stopping_threshold=100",
                         prefix);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  EXPECT_TRUE(absl::StrContains(stopped.out, "early stopping at step 10: 1 evaluation in a row"))
      << stopped.out;
  EXPECT_TRUE(fs::exists(dir + "/run/checkpoint-10"));
}

TEST(EvalStrategyTest, NoEvaluatesNothingNotEvenAtTheEnd) {
  const std::string jsonl = TempDir() + "/no_eval.jsonl";
  Result r = Train(std::string(kMlp) + "--steps=6 --eval_strategy=no --eval_every=2 " +
                   "--checkpoint_dir=none --metrics_jsonl=" + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string log = ReadWholeFile(jsonl);
  EXPECT_FALSE(absl::StrContains(log, "\"type\":\"eval\"")) << log;
  EXPECT_TRUE(absl::StrContains(log, "\"last_eval\":null")) << log;
  EXPECT_FALSE(absl::StrContains(r.out, "eval  step")) << r.out;
  // The same flags with steps evaluate at 2, 4, 6.
  Result steps = Train(std::string(kMlp) + "--steps=6 --eval_strategy=steps --eval_every=2 " +
                       "--checkpoint_dir=none --metrics_jsonl=" + jsonl);
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  EXPECT_EQ(Evals(ReadWholeFile(jsonl)).size(), 3u);
  ExpectOneLineError(Train(std::string(kMlp) + "--eval_strategy=sometimes"),
                     "--eval_strategy=sometimes is invalid: expected one of no, steps, epoch");
  ExpectOneLineError(Train(std::string(kMlp) + "--eval_strategy=no --save_best"),
                     "--eval_strategy=no evaluates nothing");
  ExpectOneLineError(Train(std::string(kMlp) + "--eval_strategy=no --early_stopping_patience=2"),
                     "--eval_strategy=no evaluates nothing");
}

int CountEventFiles(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    n += absl::StartsWith(it->path().filename().string(), "events.out.tfevents.");
  }
  return n;
}

TEST(ReportToTest, FilesGoIntoTheRunFolderOrWhereGiven) {
  const std::string base = FreshDir("report_to");
  const std::string common = std::string(kMlp) + "--steps=3 --eval_every=0 ";
  Result tb = Train(common + "--report_to=tensorboard --checkpoint_dir=" + base + "/tb");
  ASSERT_EQ(tb.exit_code, 0) << tb.err;
  EXPECT_EQ(CountEventFiles(base + "/tb/tensorboard"), 1);
  EXPECT_FALSE(fs::exists(base + "/tb/metrics.jsonl"));
  EXPECT_TRUE(absl::StrContains(tb.out, "tensorboard --logdir=" + base + "/tb/tensorboard"))
      << tb.out;

  Result jsonl = Train(common + "--report_to=jsonl --checkpoint_dir=" + base + "/js");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  EXPECT_TRUE(absl::StartsWith(ReadWholeFile(base + "/js/metrics.jsonl"), "{\"type\":\"run\""));
  EXPECT_FALSE(fs::exists(base + "/js/tensorboard"));

  Result all = Train(common + "--report_to=all --checkpoint_dir=" + base + "/all");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(CountEventFiles(base + "/all/tensorboard"), 1);
  EXPECT_TRUE(fs::exists(base + "/all/metrics.jsonl"));

  // --logging_dir: Hugging Face's name for where TensorBoard's files go.
  Result logging = Train(common + "--report_to=tensorboard --logging_dir=" + base + "/logs " +
                         "--checkpoint_dir=" + base + "/lg");
  ASSERT_EQ(logging.exit_code, 0) << logging.err;
  EXPECT_EQ(CountEventFiles(base + "/logs"), 1);
  EXPECT_FALSE(fs::exists(base + "/lg/tensorboard"));

  Result none = Train(common + "--report_to=none --checkpoint_dir=" + base + "/none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_FALSE(fs::exists(base + "/none/tensorboard"));
  EXPECT_FALSE(fs::exists(base + "/none/metrics.jsonl"));

  ExpectOneLineError(Train(common + "--report_to=none --tensorboard_dir=" + base + "/x"),
                     "--report_to=none disagrees with --tensorboard_dir=" + base + "/x");
  ExpectOneLineError(Train(common + "--report_to=wandb"),
                     "--report_to=wandb is invalid: expected one of \"\", none, tensorboard, "
                     "jsonl, all");
  ExpectOneLineError(Train(common + "--report_to=jsonl --checkpoint_dir=none"),
                     "--report_to=jsonl writes into the run's folder, but the run keeps none");
}

TEST(ResumeFromCheckpointTest, TrueResumesTheFoldersLatest) {
  const std::string dir = FreshDir("rfc");
  const std::string args = std::string(kMlp) + "--eval_every=0 --checkpoint_dir=" + dir + " ";
  ASSERT_EQ(Train(args + "--steps=4").exit_code, 0);
  int64_t steps = 4;
  for (const char* word : {"true", "True"}) {
    steps += 2;
    Result r = Train(args + "--steps=" + std::to_string(steps) +
                     " --resume_from_checkpoint=" + word);
    ASSERT_EQ(r.exit_code, 0) << word << ": " << r.err;
    EXPECT_TRUE(absl::StrContains(
        r.out, absl::StrCat("resumed from ", dir, "/latest at step ", steps - 2)))
        << r.out;
  }
  // A path is still a path.
  Result path = Train(args + "--steps=9 --resume_from_checkpoint=" + dir + "/checkpoint-4");
  ASSERT_EQ(path.exit_code, 0) << path.err;
  EXPECT_TRUE(absl::StrContains(path.out, "resumed from " + dir + "/checkpoint-4 at step 4"))
      << path.out;
}

TEST(SaveBestTest, BestIsTheLowestEvalLossAndSurvivesRetentionAndResume) {
  const std::string dir = FreshDir("best");
  // A constant, large-ish rate: the eval loss falls, but not every time.
  const std::string args = std::string(kMlp) +
                           "--eval_every=4 --schedule=constant --warmup_steps=0 --save_best "
                           "--save_total_limit=1 --log_every=1000 --checkpoint_dir=" + dir +
                           "/run --metrics_jsonl=" + dir + "/m.jsonl ";
  Result r = Train(args + "--steps=40 --lr=0.05");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Eval> evals = Evals(ReadWholeFile(dir + "/m.jsonl"));
  ASSERT_EQ(evals.size(), 10u);
  auto lowest = [](const std::vector<Eval>& e) {
    Eval best{-1, std::numeric_limits<double>::infinity()};
    for (const Eval& x : e) {
      if (x.loss < best.loss) best = x;
    }
    return best;
  };
  const Eval best = lowest(evals);
  // The test means something only when the last evaluation is not the best.
  ASSERT_NE(best.step, 40) << "the eval loss fell at every evaluation: no test of --save_best";
  const std::string best_file = absl::StrCat(dir, "/run/checkpoint-", best.step);
  EXPECT_TRUE(SameFile(dir + "/run/best", best_file)) << r.out;
  EXPECT_TRUE(SameFile(dir + "/run/latest", dir + "/run/checkpoint-40"));
  // --save_total_limit=1 keeps the newest, and the best's step file too.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir + "/run")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected = {"best", "checkpoint-40",
                                       absl::StrCat("checkpoint-", best.step), "latest",
                                       "train_config.txtpb"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
  // The checkpoint keeps the best loss to the last bit.
  auto saved = ReadCheckpoint(dir + "/run/latest");
  ASSERT_TRUE(saved.ok()) << saved.status();
  double saved_loss = 0;
  ASSERT_TRUE(absl::SimpleAtod(saved->metadata().at("best_eval_loss"), &saved_loss));
  EXPECT_EQ(saved_loss, best.loss);
  EXPECT_EQ(saved->metadata().at("best_eval_step"), absl::StrCat(best.step));

  // Resumed at a rate that makes things worse: no later evaluation beats the
  // saved best, so `best` stays where it was (a run that forgot it would
  // take its first evaluation for the best).
  Result more = Train(args + "--steps=48 --lr=0.5 --resume");
  ASSERT_EQ(more.exit_code, 0) << more.err;
  const std::vector<Eval> all = Evals(ReadWholeFile(dir + "/m.jsonl"));
  ASSERT_EQ(all.size(), 12u);
  ASSERT_GT(all[10].loss, best.loss) << "the resumed run improved: no test of the resume";
  EXPECT_EQ(lowest(all).step, best.step);
  EXPECT_TRUE(SameFile(dir + "/run/best", best_file)) << more.out;
  EXPECT_FALSE(absl::StrContains(more.out, "/best, eval loss")) << more.out;
  ExpectOneLineError(Train(std::string(kMlp) + "--save_best --checkpoint_dir=none"),
                     "--save_best keeps <checkpoint_dir>/best, but the run keeps no checkpoints");
}

TEST(EarlyStoppingTest, StopsSaysWhySavesAndKeepsItsCountAcrossResume) {
  const std::string dir = FreshDir("early");
  // A threshold no evaluation can beat: every evaluation after the first
  // counts against the patience.
  const std::string args = std::string(kMlp) +
                           "--eval_every=4 --early_stopping_threshold=100 --log_every=1000 " +
                           "--steps=40 --checkpoint_dir=" + dir + "/run --metrics_jsonl=" +
                           dir + "/m.jsonl ";
  Result r = Train(args + "--early_stopping_patience=2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(
      r.out, "early stopping at step 12: 2 evaluations in a row without an eval loss below the "
             "best by more than 100"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "checkpoint: " + dir + "/run/checkpoint-12 (step 12"))
      << r.out;
  EXPECT_TRUE(SameFile(dir + "/run/latest", dir + "/run/checkpoint-12"));
  const std::vector<std::string> lines = Lines(ReadWholeFile(dir + "/m.jsonl"));
  EXPECT_TRUE(absl::StrContains(lines.back(), "\"steps\":12,\"stopped_by\":\"early_stopping\""))
      << lines.back();

  // The same patience again: the run had stopped, and says so.
  Result again = Train(args + "--early_stopping_patience=2 --resume");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(absl::StrContains(again.out, "early stopping had ended this run")) << again.out;
  EXPECT_FALSE(fs::exists(dir + "/run/checkpoint-16"));
  // One more evaluation of patience: the count goes on from 2, so the next
  // evaluation ends it (counting from 0, it would run to step 28).
  Result more = Train(args + "--early_stopping_patience=3 --resume");
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_TRUE(absl::StrContains(more.out, "early stopping at step 16: 3 evaluations"))
      << more.out;
  EXPECT_TRUE(SameFile(dir + "/run/latest", dir + "/run/checkpoint-16"));
}

// Shard file: 256 int32 of header, then uint16 tokens.
std::string ShardText(const std::string& path) {
  const std::string bytes = ReadWholeFile(path);
  std::string text;
  for (size_t i = 1024; i + 1 < bytes.size(); i += 2) {
    const unsigned lo = static_cast<unsigned char>(bytes[i]);
    const unsigned hi = static_cast<unsigned char>(bytes[i + 1]);
    text.push_back(static_cast<char>(lo | (hi << 8)));
  }
  return text;
}

// "tokens: <train shard> (<n> tokens), <val shard> (<m>)" -> the two paths.
std::pair<std::string, std::string> ShardPaths(const std::string& out) {
  const size_t at = out.find("tokens: ");
  if (at == std::string::npos) return {};
  const size_t train_end = out.find(" (", at);
  const size_t val_start = out.find("), ", train_end) + 3;
  const size_t val_end = out.find(" (", val_start);
  return {out.substr(at + 8, train_end - at - 8), out.substr(val_start, val_end - val_start)};
}

TEST(TextFilesTest, SeveralFilesAndGlobsJoinedInTheStatedOrder) {
  const std::string dir = FreshDir("texts");
  fs::create_directories(dir + "/notes");
  const unsigned seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  const char* words[] = {"alpha ", "beta ", "gamma ", "delta\n", "epsilon ", "zeta. "};
  auto text = [&](int n) {
    std::string t;
    for (int i = 0; i < n; ++i) t += words[rng() % 6];
    return t;
  };
  const std::string b = text(400), a = text(300), more = text(200);
  std::ofstream(dir + "/notes/b.txt") << b;
  std::ofstream(dir + "/notes/a.txt") << a;
  std::ofstream(dir + "/more.txt") << more;
  const std::string gpt = "--model=gpt2 --dataset=text --steps=2 --batch_size=2 --seq_len=8 "
                          "--model_options=n_layer=1,n_head=2,d_model=16,seq_len=8 "
                          "--eval_every=0 --eval_batches=1 --precision=fp32 --progress=plain "
                          "--checkpoint_dir=none ";
  const std::string list = "'" + dir + "/notes/*.txt," + dir + "/more.txt'";
  Result r = Train(gpt + "--text_path=" + list);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "(3 files, joined in order)")) << r.out;
  // The tokens kept as shards are the files' bytes in the stated order: the
  // glob's matches by name, then the list's next item, one "\n" between two.
  const auto [train, val] = ShardPaths(r.out);
  ASSERT_FALSE(train.empty()) << r.out;
  EXPECT_EQ(ShardText(train) + ShardText(val), a + "\n" + b + "\n" + more);
  // Every file's content names the tokens: a change in one is another key.
  std::ofstream(dir + "/more.txt", std::ios::app) << "eta";
  Result changed = Train(gpt + "--text_path=" + list);
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_NE(ShardPaths(changed.out).first, train);
  // SentencePiece trains on the joined text too.
  Result sp = Train(gpt + "--text_path=" + list + " --tokenizer=sentencepiece --vocab_size=300");
  ASSERT_EQ(sp.exit_code, 0) << sp.err;
  EXPECT_TRUE(absl::StrContains(sp.out, "SentencePiece bpe vocabulary 300 (trained:")) << sp.out;
  ExpectOneLineError(Train(gpt + "--text_path='" + dir + "/more.txt," + dir + "/none/*.md'"),
                     "--text_path: '" + dir + "/none/*.md' matches no file");

  // Relative items, saved with the run as absolute ones: its config read
  // back from elsewhere trains on the same tokens.
  const std::string saved = dir + "/saved_run";
  Result relative = Train(absl::StrCat(gpt, "--text_path='notes/*.txt, more.txt' ",
                                       "--checkpoint_dir=", saved),
                          "cd " + dir + " && ");
  ASSERT_EQ(relative.exit_code, 0) << relative.err;
  EXPECT_TRUE(absl::StrContains(ReadWholeFile(saved + "/train_config.txtpb"),
                                "text_path: \"" + dir + "/notes/*.txt," + dir + "/more.txt\""))
      << ReadWholeFile(saved + "/train_config.txtpb");
  Result again = Train("--config=" + saved + "/train_config.txtpb --checkpoint_dir=none",
                       "cd / && ");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ShardPaths(again.out).first, ShardPaths(relative.out).first);
}

}  // namespace
}  // namespace mnt::trainer

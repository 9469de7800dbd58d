// The run folder as a new user meets it, through the real train binary
// (issue #41): a new run never writes into another run's work, default
// folders never collide, a resumed run is the same run (its saved config,
// its plan, its global batch), the folder describes itself, `~` works in
// path flags, and data flags say which dataset they are for.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/mpi_launch.h"
#include "tests/integration/test_env.h"

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
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string Binary() { return RunfilesRoot() + "/mantissa/trainer/cli/train"; }

// The user's HOME for this test: the default cache (and its runs/) is
// under it, as for someone who never passes --cache_dir.
std::string Home() { return TempDir() + "/home"; }
std::string Runs() { return Home() + "/.cache/mantissa/runs"; }

// `train ARGS` as a user types it (HOME set, no --cache_dir), from `cwd`.
Result Train(const std::string& args, const std::string& launcher = "") {
  static int n = 0;
  const std::string out = absl::StrCat(TempDir(), "/rf_out_", n, ".txt");
  const std::string err = absl::StrCat(TempDir(), "/rf_err_", n++, ".txt");
  fs::create_directories(Home());
  const std::string cmd = absl::StrCat("cd ", Home(), " && HOME=", Home(), " XDG_CACHE_HOME= ",
                                       launcher, launcher.empty() ? "" : " ", Binary(),
                                       " --device=cpu --progress=plain ", args, " >", out,
                                       " 2>", err);
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

void ExpectOneLineError(const Result& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0) << r.out;
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << r.err;
  EXPECT_TRUE(absl::StartsWith(err, "mantissa: error: ")) << r.err;
  EXPECT_TRUE(absl::StrContains(err, needle)) << "wanted '" << needle << "' in " << r.err;
}

// Every file of a folder with its bytes: what "nothing changed" compares.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file()) files[it->path().string()] = Slurp(it->path().string());
  }
  return files;
}

const char kMlp[] = "--model=mlp --eval_every=0 --precision=fp32 ";

TEST(RunFolderTest, ANewRunNeverWritesIntoAnotherRunsWork) {
  const std::string dir = TempDir() + "/taken";
  fs::remove_all(dir);
  ASSERT_EQ(Train(absl::StrCat(kMlp, "--steps=6 --checkpoint_dir=", dir)).exit_code, 0);
  const auto before = Snapshot(dir);
  // The finished run's folder, by path or by name: refused, nothing touched.
  ExpectOneLineError(Train(absl::StrCat(kMlp, "--steps=2 --checkpoint_dir=", dir)),
                     dir + " holds another run's work (latest = step 6");
  EXPECT_EQ(Snapshot(dir), before);
  ASSERT_EQ(Train(absl::StrCat(kMlp, "--steps=3 --run_name=named")).exit_code, 0);
  ExpectOneLineError(Train(absl::StrCat(kMlp, "--steps=2 --run_name=named")),
                     "--overwrite_output_dir replaces it");
  // Hugging Face's way: replace it on purpose. The earlier run's step files
  // go; the new run's are all that is left.
  Result replaced =
      Train(absl::StrCat(kMlp, "--steps=2 --overwrite_output_dir --output_dir=", dir));
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_TRUE(absl::StrContains(replaced.out, "--overwrite_output_dir: removed the earlier run's "
                                              "checkpoint-6, latest, train_config.txtpb"))
      << replaced.out;
  EXPECT_FALSE(fs::exists(dir + "/checkpoint-6"));
  EXPECT_TRUE(fs::exists(dir + "/checkpoint-2"));
  EXPECT_EQ(Slurp(dir + "/latest"), Slurp(dir + "/checkpoint-2"));
  EXPECT_FALSE(fs::exists(dir + "/.lock"));  // released at the end
}

TEST(RunFolderTest, DefaultFoldersAreNumberedAndResumeFindsTheNewest) {
  fs::remove_all(Runs());
  Result first = Train(absl::StrCat(kMlp, "--steps=4"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  Result second = Train(absl::StrCat(kMlp, "--steps=5"));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(absl::StrContains(second.out, "checkpoints: " + Runs() + "/mlp-digits-fp32-run2"))
      << second.out;
  EXPECT_EQ(Slurp(Runs() + "/mlp-digits-fp32/checkpoint-4"),
            Slurp(Runs() + "/mlp-digits-fp32/latest"));  // the first run is intact
  // --resume continues the newest; it finished, so there is nothing to do.
  Result again = Train(absl::StrCat(kMlp, "--resume"));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(absl::StrContains(again.out, "mantissa: nothing to do: " + Runs() +
                                               "/mlp-digits-fp32-run2/latest is at step 5 of "
                                               "--steps=5"))
      << again.out;
  // A data-parallel run has a name of its own.
  Result two = Train(absl::StrCat(kMlp, "--steps=2"), ::mnt::testing::Mpirun(2));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_TRUE(fs::exists(Runs() + "/mlp-digits-fp32-2ranks/latest")) << two.out;
}

TEST(RunFolderTest, AFailedStartLeavesNoFolder) {
  ExpectOneLineError(Train("--run_name=typo --text_path=" + TempDir() + "/no_such.txt"),
                     "no_such.txt");
  EXPECT_FALSE(fs::exists(Runs() + "/typo"));
}

TEST(RunFolderTest, ADryRunSaysWhatTheRunTakesAndWritesNothing) {
  fs::remove_all(Runs());
  const std::string run = std::string(kMlp) + "--batch_size=32 --steps=2 ";
  Result dry = Train(run + "--dry_run");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_FALSE(fs::exists(Runs())) << "a dry run made a run folder";
  Result real = Train(run + "--checkpoint_dir=none");
  ASSERT_EQ(real.exit_code, 0) << real.err;
  // The dry run's total is the run's measured peak (the report's "total"
  // row: current, then peak), as both print it.
  std::smatch dry_total, run_total;
  ASSERT_TRUE(std::regex_search(dry.out, dry_total,
                                std::regex("\\n  total +([0-9.]+ [KMG]?i?B)\\n")))
      << dry.out;
  ASSERT_TRUE(std::regex_search(real.out, run_total,
                                std::regex("\\ntotal +[0-9.]+ [KMG]?i?B +([0-9.]+ [KMG]?i?B)\\n")))
      << real.out;
  EXPECT_EQ(dry_total[1].str(), run_total[1].str());
}

TEST(RunFolderTest, OneWriterAtATime) {
  const std::string dir = TempDir() + "/busy";
  fs::remove_all(dir);
  ASSERT_EQ(Train(absl::StrCat(kMlp, "--steps=2 --checkpoint_dir=", dir)).exit_code, 0);
  // A long resumed run holds the folder...
  const std::string cmd = absl::StrCat("HOME=", Home(), " exec ", Binary(),
                                       " --device=cpu --progress=none --steps=200000 --resume "
                                       "--checkpoint_dir=", dir, " >/dev/null 2>&1");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 200 && !fs::exists(dir + "/.lock"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(dir + "/.lock"));
  // ... so a second one is refused, naming it.
  ExpectOneLineError(Train(absl::StrCat("--resume --steps=300000 --checkpoint_dir=", dir)),
                     absl::StrCat("another run (pid ", pid, ") is writing ", dir));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // Killed, it holds nothing any more.
  Result after = Train(absl::StrCat("--resume --steps=3 --checkpoint_dir=", dir));
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

TEST(RunFolderTest, AResumedRunKeepsItsPlanAndSaysWhatChanges) {
  const std::string dir = TempDir() + "/plan";
  fs::remove_all(dir);
  ASSERT_EQ(Train(absl::StrCat(kMlp, "--steps=6 --lr=0.002 --batch_size=32 --checkpoint_dir=",
                               dir))
                .exit_code,
            0);
  // No flags: the saved run, which is finished (it used to go on to the
  // default 300 steps with the default learning rate).
  Result plain = Train("--resume_from=" + dir);
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(absl::StrContains(plain.out, "nothing to do: " + dir +
                                               "/latest is at step 6 of --steps=6"))
      << plain.out;
  // A flag changes the plan, and the run says so.
  Result longer = Train("--resume_from=" + dir + " --steps=8");
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  EXPECT_TRUE(absl::StrContains(longer.out, "resume: this command changes the run's plan: "
                                            "--steps 6 -> 8 (the learning-rate schedule now "
                                            "spans 8 steps)"))
      << longer.out;
  EXPECT_TRUE(absl::StrContains(longer.out, "mantissa: cpu backend, fp32 precision, model mlp"))
      << longer.out;
  // On two ranks the global batch of 32 is kept: 16 each.
  Result two = Train("--resume_from=" + dir + " --steps=10", ::mnt::testing::Mpirun(2));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_TRUE(absl::StrContains(two.out, "resume: the run's global batch of 32 examples is "
                                         "kept: 16 per micro-batch x 1 micro-batch x 2 ranks"))
      << two.out;
  EXPECT_FALSE(absl::StrContains(two.out, "global batch 64")) << two.out;
}

// Flags that are valid only over the resumed run's saved config are
// checked there: --optimizer_options for an adamw8bit run, where the default
// --optimizer (adamw) takes none. Alone, or over a run they do not fit, they
// are still refused in one line.
TEST(RunFolderTest, AResumedRunsFlagsAreCheckedOverItsSavedConfig) {
  const std::string dir = TempDir() + "/options";
  fs::remove_all(dir);
  ASSERT_EQ(Train(absl::StrCat(kMlp, "--optimizer=adamw8bit --steps=4 --checkpoint_dir=", dir))
                .exit_code,
            0);
  const Result resumed =
      Train("--resume_from=" + dir + " --optimizer_options=min_8bit_size=4096 --steps=6");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(absl::StrContains(resumed.out + resumed.err, "resumed from " + dir))
      << resumed.out << resumed.err;
  ExpectOneLineError(Train(absl::StrCat(kMlp, "--optimizer_options=min_8bit_size=4096")),
                     "--optimizer_options='min_8bit_size=4096': --optimizer=adamw takes none");
  const std::string adamw = TempDir() + "/options_adamw";
  fs::remove_all(adamw);
  ASSERT_EQ(Train(absl::StrCat(kMlp, "--steps=2 --checkpoint_dir=", adamw)).exit_code, 0);
  ExpectOneLineError(
      Train("--resume_from=" + adamw + " --optimizer_options=min_8bit_size=1 --steps=4"),
      "--optimizer=adamw takes none");
}

TEST(RunFolderTest, TheFolderDescribesItselfAndTildeWorks) {
  // A SentencePiece run: evaluating it needs nothing but the folder.
  const std::string text = Home() + "/notes.txt";
  fs::create_directories(Home());
  {
    std::ofstream f(text);
    for (int i = 0; i < 400; ++i) {
      f << "Line " << i << ": the quick brown fox jumps over the lazy dog, "
        << (i * 7919 % 1000) << " times.\n";
    }
  }
  Result trained = Train("--text_path=~/notes.txt --tokenizer=sentencepiece --vocab_size=300 "
                         "--steps=4 --batch_size=8 --eval_batches=2 --precision=fp32 "
                         "--run_name=notes");
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  // --text_path alone trained on the text, not on the fortunes corpus.
  EXPECT_TRUE(absl::StrContains(trained.out, "defaults for gpt2 on cpu: --dataset=text"))
      << trained.out;
  EXPECT_FALSE(absl::StrContains(trained.out, "fortunes")) << trained.out;
  EXPECT_TRUE(fs::exists(Runs() + "/notes/tokenizer.model"));
  Result eval = Train("--eval_only --resume_from=~/.cache/mantissa/runs/notes");
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_TRUE(absl::StrContains(eval.out, "eval of " + Runs() + "/notes/latest (step 4): loss "))
      << eval.out;
  EXPECT_TRUE(absl::StrContains(eval.out, "vocabulary 300")) << eval.out;
}

TEST(RunFolderTest, DataFlagsSayWhichDatasetTheyAreFor) {
  ExpectOneLineError(Train("--dataset=fortunes --text_path=" + Home() + "/notes.txt"),
                     "--text_path is for --dataset=text but this run trains on "
                     "--dataset=fortunes");
  ExpectOneLineError(Train("--model=mlp --train_shards=/x/*.bin"),
                     "--model=mlp does not train on --dataset=shards");
}

TEST(RunFolderTest, AutoPrecisionReportsTheRunsOwnErrors) {
  // Under --precision=auto (the default) a mistake that has nothing to do
  // with precision is reported as itself, not as a failed probe run, and
  // nothing is probed first.
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--model=gpt3", "unknown model 'gpt3'"},
           {"--text_path=" + Home() + "/missing.txt", "missing.txt"},
           {"--resume --run_name=never_ran", "--resume: no checkpoint at"},
       }) {
    Result r = Train(args);
    ExpectOneLineError(r, needle);
    EXPECT_FALSE(absl::StrContains(r.err, "probe")) << r.err;
    EXPECT_FALSE(absl::StrContains(r.out, "precision probe")) << r.out;
  }
}

}  // namespace
}  // namespace mnt::trainer

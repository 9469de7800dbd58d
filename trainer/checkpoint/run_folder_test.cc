#include "trainer/checkpoint/run_folder.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Save(const std::string& dir, int64_t step) {
  fs::create_directories(dir);
  const std::string path = StepCheckpointPath(dir, step);
  std::ofstream(path) << "state at " << step;
  ASSERT_TRUE(PublishCheckpoint(dir, path, 0, nullptr).ok());
}

TEST(RunFolderTest, OpensAFolderOrAFileInOne) {
  const std::string dir = FreshDir("open");
  Save(dir, 10);
  Save(dir, 20);
  std::ofstream(dir + "/" + kTokenizerFileName) << "sp";
  auto f = OpenRunFolder(dir, "--resume_from");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->dir, fs::path(dir).lexically_normal().string());
  EXPECT_EQ(f->checkpoint, dir + "/latest");
  EXPECT_EQ(f->config_path, "");
  EXPECT_EQ(f->tokenizer_model, dir + "/" + kTokenizerFileName);
  auto file = OpenRunFolder(dir + "/checkpoint-10", "--input");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->dir, dir);
  EXPECT_EQ(file->checkpoint, dir + "/checkpoint-10");
}

TEST(RunFolderTest, RefusesWhatIsNoRunInOneLine) {
  const std::string dir = FreshDir("refuse");
  auto missing = OpenRunFolder(dir + "/nope", "--input");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "--input=")) << missing.status();
  auto empty = OpenRunFolder(dir, "--resume_from");
  EXPECT_TRUE(absl::StrContains(empty.status().message(), "not a run folder")) << empty.status();
  std::ofstream(dir + "/checkpoint-5") << "x";
  auto no_latest = OpenRunFolder(dir, "--resume_from");
  EXPECT_TRUE(absl::StrContains(no_latest.status().message(), "1 checkpoint-<step> file"))
      << no_latest.status();
}

TEST(RunFolderTest, ExpandsTheHomeDirectory) {
  const std::string home = FreshDir("home");
  const char* old = std::getenv("HOME");
  const std::string saved = old ? old : "";
  setenv("HOME", home.c_str(), 1);
  Save(home + "/runs/a", 3);
  auto f = OpenRunFolder("~/runs/a", "--checkpoint");
  if (old) setenv("HOME", saved.c_str(), 1);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->dir, home + "/runs/a");
}

TEST(RunFolderTest, SavedConfigReadsBackEveryFieldZerosIncluded) {
  const std::string dir = FreshDir("config");
  TrainConfig c = DefaultTrainConfig();
  c.set_checkpoint_dir(dir);
  c.set_eval_every(0);  // the default is not 0: it must not come back
  c.set_steps(123);
  c.mutable_schedule()->set_min_lr_ratio(0);
  c.set_model_options("hidden=16");
  ASSERT_TRUE(SaveRunConfig(c).ok());
  Save(dir, 1);
  auto f = OpenRunFolder(dir, "--resume_from");
  ASSERT_TRUE(f.ok()) << f.status();
  auto read = ReadRunConfig(*f);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->eval_every(), 0);
  EXPECT_EQ(read->steps(), 123);
  EXPECT_EQ(read->schedule().min_lr_ratio(), 0);
  EXPECT_EQ(read->model_options(), "hidden=16");
}

TEST(RunFolderTest, InspectsWhatANewRunWouldMixWith) {
  const std::string dir = FreshDir("inspect");
  EXPECT_FALSE(InspectRunFolder(dir).holds_run());
  EXPECT_FALSE(InspectRunFolder(dir + "/absent").exists);
  std::ofstream(dir + "/notes.txt") << "mine";
  std::ofstream(dir + "/" + kRunFolderLockName) << "";
  EXPECT_FALSE(InspectRunFolder(dir).holds_run());
  Save(dir, 100);
  Save(dir, 300);
  const RunFolderContents c = InspectRunFolder(dir);
  EXPECT_TRUE(c.holds_run());
  EXPECT_EQ(c.latest_step, 300);
  EXPECT_EQ(c.Describe(), "latest = step 300, 2 checkpoint-<step> files");
  auto removed = ClearRunFolder(dir);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->size(), 3u);
  EXPECT_FALSE(InspectRunFolder(dir).holds_run());
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));  // not a run's file: kept
}

TEST(RunFolderTest, DefaultNamesAreNumberedAndResumeFindsTheNewest) {
  const std::string parent = FreshDir("numbered");
  EXPECT_EQ(FreshRunFolder(parent, "gpt2-fortunes-auto"), parent + "/gpt2-fortunes-auto");
  EXPECT_EQ(NewestRunFolder(parent, "gpt2-fortunes-auto"), "");
  Save(parent + "/gpt2-fortunes-auto", 300);
  EXPECT_EQ(FreshRunFolder(parent, "gpt2-fortunes-auto"), parent + "/gpt2-fortunes-auto-run2");
  EXPECT_EQ(NewestRunFolder(parent, "gpt2-fortunes-auto"), parent + "/gpt2-fortunes-auto");
  Save(parent + "/gpt2-fortunes-auto-run2", 20);
  Save(parent + "/gpt2-fortunes-auto-run10", 20);
  Save(parent + "/gpt2-fortunes-auto-run03", 20);   // not a number this scheme writes
  Save(parent + "/gpt2-fortunes-auto-runner", 20);  // another base's name
  EXPECT_EQ(NewestRunFolder(parent, "gpt2-fortunes-auto"), parent + "/gpt2-fortunes-auto-run10");
  EXPECT_EQ(FreshRunFolder(parent, "gpt2-fortunes-auto"), parent + "/gpt2-fortunes-auto-run3");
  // Another base is another run.
  EXPECT_EQ(FreshRunFolder(parent, "gpt2-fortunes-auto-2ranks"),
            parent + "/gpt2-fortunes-auto-2ranks");
}

TEST(RunFolderTest, OneWriterAtATimeAndAKilledOneLeavesNoLock) {
  const std::string parent = FreshDir("lock");
  const std::string dir = parent + "/run";
  {
    auto lock = RunFolderLock::Acquire(dir);
    ASSERT_TRUE(lock.ok()) << lock.status();
    EXPECT_TRUE(RunFolderLocked(dir));
    auto second = RunFolderLock::Acquire(dir);
    ASSERT_FALSE(second.ok());
    EXPECT_TRUE(absl::StrContains(second.status().message(),
                                  "another run (pid " + std::to_string(getpid()) + ")"))
        << second.status();
    // A locked empty folder is taken: a new run numbers past it.
    EXPECT_EQ(FreshRunFolder(parent, "run"), parent + "/run-run2");
  }
  EXPECT_FALSE(RunFolderLocked(dir));
  EXPECT_EQ(FreshRunFolder(parent, "run"), parent + "/run");
  // A writer that dies without cleaning up releases the lock.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    auto lock = RunFolderLock::Acquire(dir);
    char c = lock.ok() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_TRUE(RunFolderLocked(dir));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(RunFolderLocked(dir));
  EXPECT_TRUE(RunFolderLock::Acquire(dir).ok());
}

}  // namespace
}  // namespace mnt::trainer

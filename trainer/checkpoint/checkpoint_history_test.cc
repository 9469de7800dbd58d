#include "trainer/checkpoint/checkpoint_history.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "trainer/checkpoint/checkpoint.h"

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

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void Save(const std::string& dir, int64_t step, int64_t keep) {
  const std::string path = StepCheckpointPath(dir, step);
  std::ofstream(path) << "state at " << step;
  ASSERT_TRUE(PublishCheckpoint(dir, path, keep, nullptr).ok());
}

TEST(CheckpointHistoryTest, StepFilesPlusLatestWithRetention) {
  const std::string dir = FreshDir("history");
  std::ofstream(dir + "/notes.txt") << "not a checkpoint";
  std::ofstream(dir + "/checkpoint-12x") << "not one either";
  for (int64_t step : {100, 200, 300}) Save(dir, step, /*keep=*/2);
  EXPECT_EQ(Slurp(LatestCheckpointPath(dir)), "state at 300");
  std::vector<std::pair<int64_t, std::string>> left = ListStepCheckpoints(dir);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].first, 200);
  EXPECT_EQ(left[1].first, 300);
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
  EXPECT_TRUE(fs::exists(dir + "/checkpoint-12x"));
  // Numeric order, not text order: 1000 is newer than 300.
  std::vector<std::string> removed;
  const std::string path = StepCheckpointPath(dir, 1000);
  std::ofstream(path) << "state at 1000";
  ASSERT_TRUE(PublishCheckpoint(dir, path, 2, &removed).ok());
  EXPECT_EQ(removed, std::vector<std::string>{dir + "/checkpoint-200"});
  EXPECT_EQ(Slurp(LatestCheckpointPath(dir)), "state at 1000");
}

TEST(CheckpointHistoryTest, LatestSurvivesItsStepFilesRemoval) {
  const std::string dir = FreshDir("survive");
  Save(dir, 5, 0);
  fs::remove(StepCheckpointPath(dir, 5));
  EXPECT_EQ(Slurp(LatestCheckpointPath(dir)), "state at 5");
}

TEST(CheckpointHistoryTest, KeepZeroKeepsEverything) {
  const std::string dir = FreshDir("all");
  for (int64_t step = 1; step <= 6; ++step) Save(dir, step, 0);
  EXPECT_EQ(ListStepCheckpoints(dir).size(), 6u);
}

TEST(CheckpointHistoryTest, RetentionKeepsTheBestStepFile) {
  const std::string dir = FreshDir("best");
  Save(dir, 10, 2);
  ASSERT_TRUE(PublishBestCheckpoint(dir, StepCheckpointPath(dir, 10)).ok());
  EXPECT_EQ(Slurp(BestCheckpointPath(dir)), "state at 10");
  std::vector<std::string> removed;
  for (int64_t step : {20, 30, 40}) {
    const std::string path = StepCheckpointPath(dir, step);
    std::ofstream(path) << "state at " << step;
    ASSERT_TRUE(PublishCheckpoint(dir, path, 2, &removed).ok());
  }
  // The best and the newest make the two kept; the others went oldest first.
  EXPECT_EQ(removed, (std::vector<std::string>{dir + "/checkpoint-20", dir + "/checkpoint-30"}));
  std::vector<std::pair<int64_t, std::string>> left = ListStepCheckpoints(dir);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].first, 10);
  EXPECT_EQ(left[1].first, 40);
  // Keep 1 with a best that is not the newest: both stay (as Hugging Face's).
  removed.clear();
  const std::string path = StepCheckpointPath(dir, 50);
  std::ofstream(path) << "state at 50";
  ASSERT_TRUE(PublishCheckpoint(dir, path, 1, &removed).ok());
  EXPECT_EQ(removed, std::vector<std::string>{dir + "/checkpoint-40"});
  EXPECT_TRUE(fs::exists(StepCheckpointPath(dir, 10)));
  // Once `best` moves on, its old step file goes as any other.
  ASSERT_TRUE(PublishBestCheckpoint(dir, path).ok());
  removed.clear();
  const std::string next = StepCheckpointPath(dir, 60);
  std::ofstream(next) << "state at 60";
  ASSERT_TRUE(PublishCheckpoint(dir, next, 2, &removed).ok());
  EXPECT_EQ(removed, std::vector<std::string>{dir + "/checkpoint-10"});
  EXPECT_EQ(Slurp(BestCheckpointPath(dir)), "state at 50");
}

TEST(CheckpointHistoryTest, ResumeFromAFileOrADirectory) {
  const std::string dir = FreshDir("resume");
  Save(dir, 7, 0);
  EXPECT_EQ(*ResolveCheckpointPath(dir), LatestCheckpointPath(dir));
  EXPECT_EQ(*ResolveCheckpointPath(StepCheckpointPath(dir, 7)), StepCheckpointPath(dir, 7));
  auto missing = ResolveCheckpointPath(dir + "/checkpoint-8");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), dir + "/checkpoint-8"));
  const std::string empty = FreshDir("empty");
  EXPECT_FALSE(ResolveCheckpointPath(empty).ok());
}

}  // namespace
}  // namespace mnt::trainer

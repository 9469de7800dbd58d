#include "trainer/cli/run_plan.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

ChosenNow Chosen(std::set<std::string> flags) {
  return [flags](const std::string& f) { return flags.count(f) > 0; };
}

TEST(GlobalBatchTest, IsTheProductUnlessGiven) {
  TrainConfig c = DefaultTrainConfig();
  c.set_batch_size(16);
  c.set_grad_accum_steps(2);
  ASSERT_TRUE(ResolveGlobalBatch(Chosen({}), 3, &c).ok());
  EXPECT_EQ(c.global_batch_size(), 96);
  c.set_global_batch_size(128);
  ASSERT_TRUE(ResolveGlobalBatch(Chosen({"global_batch_size"}), 2, &c).ok());
  EXPECT_EQ(c.batch_size(), 32);
}

TEST(GlobalBatchTest, RefusesWhatDoesNotSplitOrDisagrees) {
  TrainConfig c = DefaultTrainConfig();
  c.set_global_batch_size(100);
  c.set_grad_accum_steps(1);
  absl::Status s = ResolveGlobalBatch(Chosen({"global_batch_size"}), 3, &c);
  EXPECT_TRUE(absl::StrContains(s.message(), "give a multiple of 3")) << s;
  c.set_global_batch_size(128);
  c.set_batch_size(32);
  s = ResolveGlobalBatch(Chosen({"global_batch_size", "batch_size"}), 1, &c);
  EXPECT_TRUE(absl::StrContains(s.message(), "disagree")) << s;
}

TrainConfig Saved() {
  TrainConfig saved = DefaultTrainConfig();
  saved.set_batch_size(64);
  saved.set_grad_accum_steps(1);
  saved.set_global_batch_size(64);
  saved.set_steps(200);
  return saved;
}

TEST(ResumedPlanTest, KeepsThePlanAndSaysNothing) {
  TrainConfig c = Saved();
  auto lines = ResolveResumedPlan(Saved(), Chosen({}), 1, &c);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_TRUE(lines->empty());
  EXPECT_EQ(c.steps(), 200);
  EXPECT_EQ(c.batch_size(), 64);
}

TEST(ResumedPlanTest, MoreRanksKeepTheGlobalBatch) {
  TrainConfig c = Saved();
  auto lines = ResolveResumedPlan(Saved(), Chosen({}), 2, &c);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(c.batch_size(), 32);
  EXPECT_EQ(c.global_batch_size(), 64);
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_TRUE(absl::StrContains((*lines)[0], "global batch of 64 examples is kept")) << (*lines)[0];
  c = Saved();
  auto odd = ResolveResumedPlan(Saved(), Chosen({}), 3, &c);
  EXPECT_TRUE(absl::StrContains(odd.status().message(), "does not split")) << odd.status();
}

TEST(ResumedPlanTest, ConfigsSavedBeforeTheGlobalBatchMeanOneRank) {
  TrainConfig old = Saved();
  old.set_global_batch_size(0);
  TrainConfig c = old;
  ASSERT_TRUE(ResolveResumedPlan(old, Chosen({}), 2, &c).ok());
  EXPECT_EQ(c.batch_size(), 32);
}

TEST(ResumedPlanTest, ChangesGivenNowAreSaid) {
  TrainConfig c = Saved();
  c.set_steps(400);
  c.set_batch_size(64);
  auto lines = ResolveResumedPlan(Saved(), Chosen({"steps", "batch_size"}), 2, &c);
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_TRUE(absl::StrContains((*lines)[0], "--steps 200 -> 400")) << (*lines)[0];
  EXPECT_TRUE(absl::StrContains((*lines)[0], "schedule now spans 400 steps")) << (*lines)[0];
  EXPECT_TRUE(absl::StrContains((*lines)[1], "global batch 64 -> 128")) << (*lines)[1];
}

}  // namespace
}  // namespace mnt::trainer

#include "trainer/core/eval_policy.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/checkpoint/checkpoint_history.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

mantissa::TrainConfig Config(const std::string& strategy, int64_t eval_every = 0) {
  mantissa::TrainConfig c;
  c.set_eval_strategy(strategy);
  c.set_eval_every(eval_every);
  return c;
}

EvalMetrics At(int64_t step, double loss) {
  EvalMetrics m;
  m.step = step;
  m.loss = loss;
  return m;
}

TEST(EpochEndTest, MatchesCountingEveryExampleDrawn) {
  // Against a sampler that really hands the examples out: an epoch ends in a
  // step exactly when the step's examples include the epoch's last one.
  const unsigned seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t n = 1 + rng() % 40, per_step = 1 + rng() % 30;
    BatchSampler sampler(n, 7);
    int64_t drawn = 0;
    for (int step = 0; step < 40; ++step) {
      sampler.NextBatch(per_step);
      const bool crossed = (drawn + per_step) / n > drawn / n;
      drawn += per_step;
      ASSERT_EQ(EpochEndedInLastStep(sampler.state(), n, per_step), crossed)
          << "n " << n << " per step " << per_step << " step " << step + 1;
    }
  }
}

TEST(EvalPolicyTest, StrategiesSayWhenToEvaluate) {
  BatchSampler sampler(10, 1);
  EvalPolicy steps(Config("steps", 3), &sampler, 4);
  EvalPolicy no(Config("no", 3), &sampler, 4);
  EvalPolicy epoch(Config("epoch", 3), &sampler, 4);
  EvalPolicy legacy(Config("", 0), &sampler, 4);  // "" = steps; 0 = only the last
  std::vector<int64_t> by_steps, by_epoch;
  for (int64_t step = 1; step <= 10; ++step) {
    sampler.NextBatch(4);
    const bool last = step == 10;
    if (steps.EvalDue(step, last)) by_steps.push_back(step);
    if (epoch.EvalDue(step, last)) by_epoch.push_back(step);
    EXPECT_FALSE(no.EvalDue(step, last)) << step;
    EXPECT_EQ(legacy.EvalDue(step, last), last) << step;
  }
  EXPECT_EQ(by_steps, (std::vector<int64_t>{3, 6, 9, 10}));
  // 4 examples a step through epochs of 10: the 10th, 20th, ... are drawn
  // in steps 3, 5, 8 and 10.
  EXPECT_EQ(by_epoch, (std::vector<int64_t>{3, 5, 8, 10}));
}

TEST(EvalPolicyTest, BestAndEarlyStoppingAsHuggingFace) {
  mantissa::TrainConfig c = Config("steps", 1);
  c.set_save_best(true);
  c.set_early_stopping_patience(2);
  c.set_early_stopping_threshold(0.05);
  BatchSampler sampler(10, 1);
  EvalPolicy p(c, &sampler, 1);
  // First: the best, and an improvement.
  EvalPolicy::Verdict v = p.OnEval(At(1, 2.0));
  EXPECT_TRUE(v.save_checkpoint);
  EXPECT_EQ(p.state().best_step, 1);
  // Lower, but by less than the threshold: the best moves (saved), the
  // patience counts it as no improvement.
  v = p.OnEval(At(2, 1.97));
  EXPECT_TRUE(v.save_checkpoint);
  EXPECT_EQ(p.state().best_step, 2);
  EXPECT_EQ(p.state().evals_without_improvement, 1);
  EXPECT_FALSE(p.stop());
  // Better by more than the threshold: the count starts over.
  v = p.OnEval(At(3, 1.9));
  EXPECT_EQ(p.state().evals_without_improvement, 0);
  // NaN is never the best, nor an improvement.
  v = p.OnEval(At(4, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(v.save_checkpoint);
  EXPECT_EQ(p.state().best_step, 3);
  EXPECT_EQ(p.state().evals_without_improvement, 1);
  v = p.OnEval(At(5, 1.95));
  EXPECT_TRUE(p.stop());
  EXPECT_TRUE(v.save_checkpoint);  // the stop keeps its step
  EXPECT_EQ(v.message,
            "early stopping at step 5: 2 evaluations in a row without an eval loss below the "
            "best by more than 0.05 (the best is 1.9 at step 3; --early_stopping_patience=2, "
            "--early_stopping_threshold=0.05)");
}

TEST(EvalPolicyTest, WithoutTheFeaturesNothingIsSavedOrStopped) {
  BatchSampler sampler(10, 1);
  EvalPolicy p(Config("steps", 1), &sampler, 1);
  for (int64_t step = 1; step <= 20; ++step) {
    const EvalPolicy::Verdict v = p.OnEval(At(step, 1.0 + step));  // worse every time
    EXPECT_FALSE(v.save_checkpoint);
    EXPECT_TRUE(v.message.empty());
    EXPECT_FALSE(p.stop());
  }
}

TEST(EvalPolicyTest, StateRoundTripsThroughCheckpointMetadata) {
  mantissa::TrainConfig c = Config("steps", 1);
  c.set_early_stopping_patience(3);
  BatchSampler sampler(10, 1);
  EvalPolicy saved(c, &sampler, 1);
  // A loss that needs all 17 digits to read back as itself.
  const double loss = std::nextafter(1.0 / 3.0, 1.0);
  saved.OnEval(At(4, loss));
  saved.OnEval(At(5, 0.5));
  saved.OnEval(At(6, 0.6));
  google::protobuf::Map<std::string, std::string> metadata;
  saved.Save(&metadata);
  auto state = EvalPolicy::Read(metadata, "ck");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->best_loss, loss);  // exactly
  EXPECT_EQ(state->best_step, 4);
  EXPECT_EQ(state->evals_without_improvement, 2);
  // A resumed run with the same patience is one evaluation from stopping.
  EvalPolicy resumed(c, &sampler, 1);
  EXPECT_EQ(resumed.Apply(*state), "");
  resumed.OnEval(At(7, 0.4));
  EXPECT_TRUE(resumed.stop());
  // A run that had stopped says so when restored, unless given more patience.
  google::protobuf::Map<std::string, std::string> stopped;
  resumed.Save(&stopped);
  EvalPolicy again(c, &sampler, 1);
  EXPECT_NE(again.Apply(*EvalPolicy::Read(stopped, "ck")).find("early stopping had ended"),
            std::string::npos);
  EXPECT_TRUE(again.stop());
  c.set_early_stopping_patience(4);
  EvalPolicy patient(c, &sampler, 1);
  EXPECT_EQ(patient.Apply(*EvalPolicy::Read(stopped, "ck")), "");
  EXPECT_FALSE(patient.stop());
}

TEST(EvalPolicyTest, BadMetadataIsRefusedNamingTheKey) {
  google::protobuf::Map<std::string, std::string> none;
  auto empty = EvalPolicy::Read(none, "ck");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->best_step, -1);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"x", "3", "0"}, "ck: checkpoint best_eval_loss 'x' is not a finite number"},
      {{"nan", "3", "0"}, "ck: checkpoint best_eval_loss 'nan' is not a finite number"},
      {{"1.5", "-2", "0"}, "ck: checkpoint best_eval_step '-2' is not a step (or -1)"},
      {{"1.5", "3", "-1"},
       "ck: checkpoint evals_without_improvement '-1' is not a whole number >= 0"},
      {{"1.5", "-1", "0"}, "ck: checkpoint best_eval_loss '1.5' is not inf (no best step)"},
  };
  for (const auto& [values, message] : cases) {
    google::protobuf::Map<std::string, std::string> m;
    m["best_eval_loss"] = values[0];
    m["best_eval_step"] = values[1];
    m["evals_without_improvement"] = values[2];
    auto read = EvalPolicy::Read(m, "ck");
    ASSERT_FALSE(read.ok()) << message;
    EXPECT_EQ(read.status().message(), message);
  }
  google::protobuf::Map<std::string, std::string> partial;
  partial["best_eval_step"] = "3";
  EXPECT_FALSE(EvalPolicy::Read(partial, "ck").ok());
}

TEST(EvalPolicyTest, PublishesBestOnlyForTheBestStep) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/policy_best";
  fs::remove_all(dir);
  fs::create_directories(dir);
  mantissa::TrainConfig c = Config("steps", 1);
  c.set_save_best(true);
  BatchSampler sampler(10, 1);
  EvalPolicy p(c, &sampler, 1);
  p.OnEval(At(2, 1.0));
  p.OnEval(At(3, 1.5));
  for (int64_t step : {2, 3}) {
    std::ofstream(StepCheckpointPath(dir, step)) << "state at " << step;
  }
  auto note = p.PublishBest(dir, StepCheckpointPath(dir, 3), 3);
  ASSERT_TRUE(note.ok());
  EXPECT_EQ(*note, "");
  EXPECT_FALSE(fs::exists(BestCheckpointPath(dir)));
  note = p.PublishBest(dir, StepCheckpointPath(dir, 2), 2);
  ASSERT_TRUE(note.ok()) << note.status();
  EXPECT_EQ(*note, " and " + dir + "/best, eval loss 1, the lowest so far");
  std::ifstream f(BestCheckpointPath(dir));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), "state at 2");
}

}  // namespace
}  // namespace mnt::trainer

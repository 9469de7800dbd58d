#include "trainer/cli/run_schedule.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

std::function<bool(const std::string&)> Given(std::set<std::string> names) {
  return [names](const std::string& name) { return names.count(name) > 0; };
}

TEST(ScheduleDefaultsTest, LinearEndsAtZeroUnlessTheFloorIsGiven) {
  TrainConfig linear = DefaultTrainConfig();
  linear.mutable_schedule()->set_kind("linear");
  ApplyScheduleDefaults(Given({}), &linear);
  EXPECT_EQ(linear.schedule().min_lr_ratio(), 0);

  TrainConfig cosine = DefaultTrainConfig();
  ApplyScheduleDefaults(Given({}), &cosine);
  EXPECT_EQ(cosine.schedule().min_lr_ratio(), 0.1);

  TrainConfig chosen = DefaultTrainConfig();
  chosen.mutable_schedule()->set_kind("linear");
  chosen.mutable_schedule()->set_min_lr_ratio(0.1);  // given, even at the default
  ApplyScheduleDefaults(Given({"min_lr_ratio"}), &chosen);
  EXPECT_EQ(chosen.schedule().min_lr_ratio(), 0.1);
}

std::string RunDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/runs/a";
}

TEST(RunOutputsTest, ReportToFillsTheFolderDefaults) {
  const std::string dir = RunDir();
  TrainConfig c = DefaultTrainConfig();
  c.set_checkpoint_dir(dir);
  c.set_report_to("all");
  ASSERT_TRUE(ResolveRunOutputs(&c).ok());
  EXPECT_EQ(c.tensorboard_dir(), dir + "/tensorboard");
  EXPECT_EQ(c.metrics_jsonl(), dir + "/metrics.jsonl");
  EXPECT_TRUE(std::filesystem::is_directory(dir));  // the log opens before a checkpoint

  // Given paths win; each value adds only its own.
  TrainConfig tb = DefaultTrainConfig();
  tb.set_checkpoint_dir("/runs/a");
  tb.set_report_to("tensorboard");
  tb.set_tensorboard_dir("/logs/x");
  ASSERT_TRUE(ResolveRunOutputs(&tb).ok());
  EXPECT_EQ(tb.tensorboard_dir(), "/logs/x");
  EXPECT_EQ(tb.metrics_jsonl(), "");

  TrainConfig jsonl = DefaultTrainConfig();
  jsonl.set_checkpoint_dir(dir);
  jsonl.set_report_to("jsonl");
  ASSERT_TRUE(ResolveRunOutputs(&jsonl).ok());
  EXPECT_EQ(jsonl.tensorboard_dir(), "");
  EXPECT_EQ(jsonl.metrics_jsonl(), dir + "/metrics.jsonl");

  TrainConfig unset = DefaultTrainConfig();  // report_to "": nothing added
  unset.set_checkpoint_dir("/runs/a");
  ASSERT_TRUE(ResolveRunOutputs(&unset).ok());
  EXPECT_EQ(unset.tensorboard_dir(), "");
  EXPECT_EQ(unset.metrics_jsonl(), "");
}

TEST(RunOutputsTest, ContradictionsAreOneLine) {
  TrainConfig none = DefaultTrainConfig();
  none.set_checkpoint_dir("/runs/a");
  none.set_report_to("none");
  none.set_metrics_jsonl("m.jsonl");
  EXPECT_EQ(ResolveRunOutputs(&none).message(),
            "--report_to=none disagrees with --metrics_jsonl=m.jsonl: give one of them");

  TrainConfig no_folder = DefaultTrainConfig();
  no_folder.set_report_to("tensorboard");
  EXPECT_EQ(ResolveRunOutputs(&no_folder).message(),
            "--report_to=tensorboard writes into the run's folder, but the run keeps none "
            "(--checkpoint_dir=none): give --tensorboard_dir (--logging_dir) or "
            "--metrics_jsonl");
  no_folder.set_tensorboard_dir("/logs/x");
  EXPECT_TRUE(ResolveRunOutputs(&no_folder).ok());

  TrainConfig best = DefaultTrainConfig();
  best.set_save_best(true);
  EXPECT_FALSE(ResolveRunOutputs(&best).ok());
}

TEST(EpochsTest, StepsAreEpochsOfTheGlobalBatchRoundedUp) {
  const unsigned seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    TrainConfig c = DefaultTrainConfig();
    c.set_batch_size(1 + rng() % 64);
    c.set_grad_accum_steps(1 + rng() % 4);
    const int64_t ranks = 1 + rng() % 4;
    const int64_t examples = 1 + rng() % 5000;
    const int64_t whole = 1 + rng() % 5;
    c.set_num_train_epochs(static_cast<double>(whole));
    ASSERT_TRUE(ResolveEpochs(examples, ranks, &c).ok());
    // Integers: the smallest step count whose examples cover the epochs.
    const int64_t global = c.batch_size() * c.grad_accum_steps() * ranks;
    const int64_t need = whole * examples;
    EXPECT_EQ(c.steps(), (need + global - 1) / global)
        << whole << " x " << examples << " / " << global;
    EXPECT_GE(c.steps() * global, need);
    EXPECT_LT((c.steps() - 1) * global, need);
  }
  // A given global batch is the one used, and fractions of an epoch count.
  TrainConfig c = DefaultTrainConfig();
  c.set_global_batch_size(100);
  c.set_num_train_epochs(0.5);
  auto note = ResolveEpochs(1437, 4, &c);
  ASSERT_TRUE(note.ok());
  EXPECT_EQ(c.steps(), 8);  // 718.5 / 100
  EXPECT_EQ(*note,
            "--num_train_epochs=0.5: 8 steps (0.5 x 1437 training examples / 100 per step, "
            "rounded up)");
  // Given in steps: untouched, nothing to say.
  TrainConfig steps = DefaultTrainConfig();
  auto none = ResolveEpochs(1437, 1, &steps);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
  EXPECT_EQ(steps.steps(), 300);
  TrainConfig huge = DefaultTrainConfig();
  huge.set_num_train_epochs(1e300);
  EXPECT_FALSE(ResolveEpochs(1437, 1, &huge).ok());
}

}  // namespace
}  // namespace mnt::trainer

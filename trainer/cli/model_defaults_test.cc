#include "trainer/cli/model_defaults.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

auto Given(std::set<std::string> flags) {
  return [flags](const std::string& f) { return flags.count(f) > 0; };
}

TEST(ModelDefaultsTest, ImageModelsDefaultToDigits) {
  for (const char* model : {"mlp", "cnn"}) {
    TrainConfig c = DefaultTrainConfig();
    c.set_model(model);
    ApplyModelDefaults("cpu", Given({"model"}), &c);
    EXPECT_EQ(c.data().dataset(), "digits") << model;
    EXPECT_EQ(c.steps(), std::string(model) == "mlp" ? 600 : 300) << model;
    EXPECT_TRUE(ValidateTrainConfig(c).ok()) << model;
  }
}

TEST(ModelDefaultsTest, EpochsLeaveTheStepsAlone) {
  TrainConfig c = DefaultTrainConfig();
  c.set_model("mlp");
  c.set_num_train_epochs(2);
  const std::vector<std::string> changes = ApplyModelDefaults("cpu", Given({"model"}), &c);
  EXPECT_EQ(c.steps(), 300);  // untouched: the epochs become the steps later
  EXPECT_EQ(changes, std::vector<std::string>{"--dataset=digits"});
}

TEST(ModelDefaultsTest, GivenFlagsAreNeverTouched) {
  TrainConfig c = DefaultTrainConfig();
  c.set_model("cnn");
  c.mutable_data()->set_dataset("idx");
  c.set_steps(7);
  c.mutable_optimizer()->set_lr(0.5);
  ApplyModelDefaults("cpu", Given({"model", "dataset", "steps", "lr"}), &c);
  EXPECT_EQ(c.data().dataset(), "idx");
  EXPECT_EQ(c.steps(), 7);
  EXPECT_EQ(c.optimizer().lr(), 0.5);
}

TEST(ModelDefaultsTest, GptIsSizedForTheDevice) {
  TrainConfig cpu = DefaultTrainConfig();
  EXPECT_TRUE(ApplyModelDefaults("cpu", Given({}), &cpu).empty());
  EXPECT_EQ(cpu.SerializeAsString(), DefaultTrainConfig().SerializeAsString());

  TrainConfig gpu = DefaultTrainConfig();
  ApplyModelDefaults("cuda", Given({}), &gpu);
  EXPECT_EQ(gpu.model_options(), "preset=gpt2-124m");
  EXPECT_EQ(gpu.data().seq_len(), 1024);
  EXPECT_EQ(gpu.batch_size(), 8);

  TrainConfig mine = DefaultTrainConfig();
  mine.set_model_options("preset=gpt2-tiny");
  ApplyModelDefaults("cuda", Given({"model_options"}), &mine);
  EXPECT_EQ(mine.model_options(), "preset=gpt2-tiny");
}

TEST(ModelDefaultsTest, DatasetOfTheWrongKindNamesWhatTheModelTakes) {
  TrainConfig c = DefaultTrainConfig();
  c.set_model("mlp");
  c.mutable_data()->set_dataset("fortunes");
  absl::Status s = CheckModelTakesDataset(c);
  EXPECT_EQ(s.message(),
            "--model=mlp does not train on --dataset=fortunes: mlp takes labelled images "
            "(--dataset=digits|idx); for fortunes use --model=gpt2");
  c.set_model("gpt2");
  c.mutable_data()->set_dataset("digits");
  EXPECT_EQ(CheckModelTakesDataset(c).message(),
            "--model=gpt2 does not train on --dataset=digits: gpt2 takes token sequences "
            "(--dataset=fortunes|shards|text); for digits use --model=cnn or --model=mlp");
  for (const char* ok : {"fortunes", "shards", "text"}) {
    c.mutable_data()->set_dataset(ok);
    EXPECT_TRUE(CheckModelTakesDataset(c).ok()) << ok;
  }
  c.set_model("my_plugin");  // not ours to judge
  c.mutable_data()->set_dataset("digits");
  EXPECT_TRUE(CheckModelTakesDataset(c).ok());
}

}  // namespace
}  // namespace mnt::trainer

#include "trainer/cli/model_defaults.h"

#include <set>
#include <string>

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

}  // namespace
}  // namespace mnt::trainer

#include "trainer/cli/model_defaults.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/sdk/data_kinds.h"

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

// What the in-tree models declare (ABI 1.12), and a third-party model that
// declares nothing.
std::vector<MNT_DataKind> Declared(const std::string& model) {
  if (model == "mlp") return {MNT_DATA_KIND_FEATURES, MNT_DATA_KIND_IMAGES};
  if (model == "cnn") return {MNT_DATA_KIND_IMAGES};
  if (model == "gpt2") return {MNT_DATA_KIND_TOKENS};
  return {};
}
const std::vector<std::string> kModels = {"cnn", "gpt2", "mine", "mlp"};

TEST(ModelDefaultsTest, DatasetOfTheWrongKindNamesWhatTheModelTakes) {
  TrainConfig c = DefaultTrainConfig();
  c.set_model("mlp");
  c.mutable_data()->set_dataset("fortunes");
  absl::Status s = CheckModelTakesDataset(c, Declared, kModels);
  EXPECT_EQ(s.message(),
            "--model=mlp does not train on --dataset=fortunes: mlp takes labelled feature vectors "
            "or labelled images (--dataset=digits|idx); for fortunes use --model=gpt2");
  c.set_model("gpt2");
  c.mutable_data()->set_dataset("digits");
  EXPECT_EQ(CheckModelTakesDataset(c, Declared, kModels).message(),
            "--model=gpt2 does not train on --dataset=digits: gpt2 takes token sequences "
            "(--dataset=fortunes|shards|text); for digits use --model=cnn or --model=mlp");
  for (const char* ok : {"fortunes", "shards", "text"}) {
    c.mutable_data()->set_dataset(ok);
    EXPECT_TRUE(CheckModelTakesDataset(c, Declared, kModels).ok()) << ok;
  }
  c.set_model("cnn");
  for (const char* ok : {"digits", "idx"}) {
    c.mutable_data()->set_dataset(ok);
    EXPECT_TRUE(CheckModelTakesDataset(c, Declared, kModels).ok()) << ok;
  }
  c.set_model("mine");  // declares nothing: its Model_Create decides
  c.mutable_data()->set_dataset("digits");
  EXPECT_TRUE(CheckModelTakesDataset(c, Declared, kModels).ok());
}

TEST(ModelDefaultsTest, TheInTreeModelsDeclareTheirData) {
  // The real plugins, as the trainer loads them.
  PluginRegistry registry(PluginRegistry::DefaultSearchPath("", ""));
  for (const auto& [model, kinds] :
       std::vector<std::pair<std::string, std::vector<MNT_DataKind>>>{
           {"mlp", {MNT_DATA_KIND_FEATURES, MNT_DATA_KIND_IMAGES}},
           {"cnn", {MNT_DATA_KIND_IMAGES}},
           {"gpt2", {MNT_DATA_KIND_TOKENS}}}) {
    auto plugin = registry.Get(MNT_PLUGIN_KIND_MODEL, model);
    ASSERT_TRUE(plugin.ok()) << plugin.status();
    EXPECT_EQ(sdk::DeclaredDataKinds((*plugin)->api), kinds) << model;
  }
  TrainConfig c = DefaultTrainConfig();
  c.set_model("cnn");
  EXPECT_EQ(CheckModelTakesDataset(c, &registry).message(),
            "--model=cnn does not train on --dataset=fortunes: cnn takes labelled images "
            "(--dataset=digits|idx); for fortunes use --model=gpt2");
}

}  // namespace
}  // namespace mnt::trainer

#include "trainer/cli/model_defaults.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plugins/sdk/data_kinds.h"

namespace mnt::trainer {

std::vector<std::string> ApplyModelDefaults(
    const std::string& device, const std::function<bool(const std::string&)>& given,
    TrainConfig* c) {
  std::vector<std::string> changes;
  auto set_string = [&](const char* flag, const std::string& value,
                        void (TrainConfig::*setter)(const std::string&)) {
    if (given(flag)) return;
    (c->*setter)(value);
    changes.push_back(absl::StrCat("--", flag, "=", value));
  };
  auto set_data_string = [&](const char* flag, const std::string& value,
                             void (DataConfig::*setter)(const std::string&)) {
    if (given(flag)) return;
    (c->mutable_data()->*setter)(value);
    changes.push_back(absl::StrCat("--", flag, "=", value));
  };
  auto set_int = [&](const char* flag, int64_t value, int64_t current,
                     const std::function<void(int64_t)>& setter) {
    if (given(flag) || current == value) return;
    setter(value);
    changes.push_back(absl::StrCat("--", flag, "=", value));
  };

  const std::string& model = c->model();
  if (model == "mlp" || model == "cnn") {
    // Image classifiers: the digits dataset, trained long enough to reach
    // the accuracy the README states.
    set_data_string("dataset", "digits", &DataConfig::set_dataset);
    // --num_train_epochs gives the run's length instead.
    if (c->num_train_epochs() <= 0) {
      set_int("steps", model == "mlp" ? 600 : 300, c->steps(),
              [&](int64_t v) { c->set_steps(v); });
    }
    if (model == "cnn" && !given("lr") && c->optimizer().lr() != 3e-3) {
      c->mutable_optimizer()->set_lr(3e-3);
      changes.push_back("--lr=0.003");
    }
  } else if (model == "gpt2" && device == "cuda") {
    // A GPU has room for GPT-2 small: 124M parameters, context 1024.
    set_string("model_options", "preset=gpt2-124m", &TrainConfig::set_model_options);
    set_int("seq_len", 1024, c->data().seq_len(),
            [&](int64_t v) { c->mutable_data()->set_seq_len(v); });
    set_int("batch_size", 8, c->batch_size(), [&](int64_t v) { c->set_batch_size(v); });
  }
  return changes;
}

namespace {

// The datasets in the order messages list them, with the kinds of data each
// gives (idx: whatever its file holds, images or feature vectors).
struct DatasetKinds {
  const char* dataset;
  std::vector<MNT_DataKind> kinds;
};
const std::vector<DatasetKinds>& Datasets() {
  static const auto* const datasets = new std::vector<DatasetKinds>{
      {"digits", {MNT_DATA_KIND_IMAGES}},
      {"idx", {MNT_DATA_KIND_IMAGES, MNT_DATA_KIND_FEATURES}},
      {"fortunes", {MNT_DATA_KIND_TOKENS}},
      {"shards", {MNT_DATA_KIND_TOKENS}},
      {"text", {MNT_DATA_KIND_TOKENS}},
  };
  return *datasets;
}

bool TakesAny(const std::vector<MNT_DataKind>& model, const std::vector<MNT_DataKind>& data) {
  for (MNT_DataKind k : data) {
    if (sdk::Takes(model, k)) return true;
  }
  return false;
}

// "labelled images", as the run's messages say it.
const char* KindPhrase(MNT_DataKind kind) {
  switch (kind) {
    case MNT_DATA_KIND_FEATURES: return "labelled feature vectors";
    case MNT_DATA_KIND_IMAGES: return "labelled images";
    case MNT_DATA_KIND_TOKENS: return "token sequences";
    default: return "data of an unknown kind";
  }
}

}  // namespace

absl::Status CheckModelTakesDataset(const TrainConfig& c, const DeclaredDataKinds& declared,
                                    const std::vector<std::string>& models) {
  const std::vector<MNT_DataKind> takes = declared(c.model());
  if (takes.empty()) return absl::OkStatus();  // only its Model_Create can say
  const std::string& dataset = c.data().dataset();
  const std::vector<MNT_DataKind>* gives = nullptr;
  for (const DatasetKinds& d : Datasets()) {
    if (d.dataset == dataset) gives = &d.kinds;
  }
  if (gives == nullptr || TakesAny(takes, *gives)) return absl::OkStatus();
  std::vector<std::string> phrases, datasets;
  for (MNT_DataKind k : takes) phrases.push_back(KindPhrase(k));
  for (const DatasetKinds& d : Datasets()) {
    if (TakesAny(takes, d.kinds)) datasets.push_back(d.dataset);
  }
  // Which other models would take this dataset instead.
  std::vector<std::string> others;
  for (const std::string& m : models) {
    if (m != c.model() && TakesAny(declared(m), *gives)) others.push_back("--model=" + m);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--model=", c.model(), " does not train on --dataset=", dataset, ": ", c.model(),
      " takes ", absl::StrJoin(phrases, " or "),
      datasets.empty() ? "" : absl::StrCat(" (--dataset=", absl::StrJoin(datasets, "|"), ")"),
      others.empty() ? "" : absl::StrCat("; for ", dataset, " use ", absl::StrJoin(others, " or "))));
}

absl::Status CheckModelTakesDataset(const TrainConfig& c, PluginRegistry* registry) {
  const DeclaredDataKinds declared = [registry](const std::string& model) {
    auto plugin = registry->Get(MNT_PLUGIN_KIND_MODEL, model);
    return plugin.ok() ? sdk::DeclaredDataKinds((*plugin)->api) : std::vector<MNT_DataKind>{};
  };
  return CheckModelTakesDataset(c, declared, registry->Available(MNT_PLUGIN_KIND_MODEL));
}

}  // namespace mnt::trainer

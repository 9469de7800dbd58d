#include "trainer/cli/model_defaults.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

absl::Status CheckModelTakesDataset(const TrainConfig& c) {
  struct Accepts {
    std::vector<std::string> datasets;
    const char* what;
  };
  static const auto* const table = new std::map<std::string, Accepts>{
      {"mlp", {{"digits", "idx"}, "labelled images"}},
      {"cnn", {{"digits", "idx"}, "labelled images"}},
      {"gpt2", {{"fortunes", "shards", "text"}, "token sequences"}},
  };
  auto it = table->find(c.model());
  if (it == table->end()) return absl::OkStatus();
  const Accepts& accepts = it->second;
  for (const std::string& d : accepts.datasets) {
    if (d == c.data().dataset()) return absl::OkStatus();
  }
  // Which in-tree models would take this dataset instead.
  std::vector<std::string> others;
  for (const auto& [model, a] : *table) {
    for (const std::string& d : a.datasets) {
      if (d == c.data().dataset()) others.push_back("--model=" + model);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--model=", c.model(), " does not train on --dataset=", c.data().dataset(),
      ": ", c.model(), " takes ", accepts.what, " (--dataset=",
      absl::StrJoin(accepts.datasets, "|"), ")",
      others.empty() ? "" : absl::StrCat("; for ", c.data().dataset(), " use ",
                                         absl::StrJoin(others, " or "))));
}

}  // namespace mnt::trainer

#include "trainer/cli/model_defaults.h"

#include "absl/strings/str_cat.h"

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
    set_int("steps", model == "mlp" ? 600 : 300, c->steps(),
            [&](int64_t v) { c->set_steps(v); });
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

}  // namespace mnt::trainer

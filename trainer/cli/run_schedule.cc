#include "trainer/cli/run_schedule.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/io/atomic_file.h"

namespace mnt::trainer {

void ApplyScheduleDefaults(const std::function<bool(const std::string&)>& given,
                           TrainConfig* config) {
  // Hugging Face's linear schedule ends at 0; cosine keeps nanoGPT's floor.
  if (config->schedule().kind() == "linear" && !given("min_lr_ratio")) {
    config->mutable_schedule()->set_min_lr_ratio(0);
  }
}

absl::Status ResolveRunOutputs(TrainConfig* config) {
  const std::string& dir = config->checkpoint_dir();
  const std::string& report_to = config->report_to();
  if (config->save_best() && dir.empty()) {
    return absl::InvalidArgumentError(
        "--save_best keeps <checkpoint_dir>/best, but the run keeps no checkpoints "
        "(--checkpoint_dir=none): give it a folder");
  }
  if (report_to == "none") {
    for (const auto& [flag, value] :
         {std::pair<const char*, std::string>{"tensorboard_dir", config->tensorboard_dir()},
          {"metrics_jsonl", config->metrics_jsonl()}}) {
      if (!value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--report_to=none disagrees with --", flag, "=", value, ": give one of them"));
      }
    }
    return absl::OkStatus();
  }
  const bool tensorboard = report_to == "tensorboard" || report_to == "all";
  const bool jsonl = report_to == "jsonl" || report_to == "all";
  const bool needs_folder = (tensorboard && config->tensorboard_dir().empty()) ||
                            (jsonl && config->metrics_jsonl().empty());
  if (needs_folder && dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--report_to=", report_to,
        " writes into the run's folder, but the run keeps none (--checkpoint_dir=none): "
        "give --tensorboard_dir (--logging_dir) or --metrics_jsonl"));
  }
  if (tensorboard && config->tensorboard_dir().empty()) {
    config->set_tensorboard_dir(dir + "/tensorboard");
  }
  if (jsonl && config->metrics_jsonl().empty()) {
    // The log opens before the first checkpoint would make the folder.
    if (auto s = MakeDirectories(dir); !s.ok()) return s;
    config->set_metrics_jsonl(dir + "/metrics.jsonl");
  }
  return absl::OkStatus();
}

int64_t GlobalBatch(const TrainConfig& config, int64_t world_size) {
  if (config.global_batch_size() > 0) return config.global_batch_size();
  return config.batch_size() * std::max<int64_t>(1, config.grad_accum_steps()) *
         std::max<int64_t>(1, world_size);
}

absl::StatusOr<std::string> ResolveEpochs(int64_t train_examples, int64_t world_size,
                                          TrainConfig* config) {
  const double epochs = config->num_train_epochs();
  if (epochs <= 0) return std::string();
  const int64_t batch = GlobalBatch(*config, world_size);
  // The epsilon keeps an exact quotient (3 x 64 / 64) from rounding up to
  // one step more through a last-bit error.
  const double exact = epochs * static_cast<double>(train_examples) / static_cast<double>(batch);
  const double steps = std::max(1.0, std::ceil(exact - 1e-9));
  // The trainer's step counts are int64; far below that, a run never ends.
  constexpr double kMaxSteps = 1e15;
  if (!(steps <= kMaxSteps)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--num_train_epochs=%g is %.6g steps of %d examples: more than a run can take", epochs,
        steps, batch));
  }
  config->set_steps(static_cast<int64_t>(steps));
  return absl::StrFormat(
      "--num_train_epochs=%g: %d steps (%g x %d training examples / %d per step, rounded up)",
      epochs, config->steps(), epochs, train_examples, batch);
}

}  // namespace mnt::trainer

#include "trainer/checkpoint/run_config_file.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "trainer/checkpoint/atomic_file.h"

namespace mnt::trainer {

std::string RunConfigText(const TrainConfig& config) {
  TrainConfig saved = config;
  saved.clear_resume();
  saved.clear_resume_if_exists();
  saved.clear_resume_from();
  saved.clear_eval_only();
  std::string text;
  google::protobuf::TextFormat::PrintToString(saved, &text);
  return absl::StrCat(
      "# The config of the run whose checkpoints are in this folder, as train resolved it.\n"
      "# train --config=<this file> --resume continues the run; --eval_only evaluates it.\n",
      text);
}

absl::StatusOr<std::string> SaveRunConfig(const TrainConfig& config) {
  const std::string path = absl::StrCat(config.checkpoint_dir(), "/", kRunConfigFileName);
  if (auto s = WriteFileAtomic(path, RunConfigText(config)); !s.ok()) return s;
  return path;
}

}  // namespace mnt::trainer

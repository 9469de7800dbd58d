#include "trainer/checkpoint/run_config_file.h"

#include <filesystem>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainer/io/atomic_file.h"
#include "trainer/config/user_path.h"

namespace mnt::trainer {

namespace {

// A path as the run saw it, made absolute, so the saved config reads the
// same files from any directory; "" stays "".
void Absolute(std::string* path) {
  if (!path->empty()) *path = std::filesystem::absolute(*path).lexically_normal().string();
}

// --text_path may list several files and globs (trainer/data/text.h): each
// item absolute, its ~ expanded; a file whose name holds a comma is one.
void AbsoluteTextPaths(std::string* text_path) {
  if (text_path->empty() || CheckRegularFile(*text_path).ok()) return Absolute(text_path);
  std::vector<std::string> items = absl::StrSplit(*text_path, ',', absl::SkipWhitespace());
  for (std::string& item : items) {
    item = ExpandUserPath(std::string(absl::StripAsciiWhitespace(item)));
    Absolute(&item);
  }
  *text_path = absl::StrJoin(items, ",");
}

}  // namespace

std::string RunConfigText(const TrainConfig& config) {
  TrainConfig saved = config;
  DataConfig& d = *saved.mutable_data();
  for (std::string* p : {d.mutable_train_images(), d.mutable_train_labels(),
                         d.mutable_test_images(), d.mutable_test_labels(),
                         d.mutable_cache_dir(), d.mutable_train_shards(),
                         d.mutable_val_shards(), d.mutable_tokenizer_model(),
                         saved.mutable_checkpoint_dir(), saved.mutable_metrics_jsonl(),
                         saved.mutable_tensorboard_dir()}) {
    Absolute(p);
  }
  AbsoluteTextPaths(d.mutable_text_path());
  // How this invocation started is the next command's choice, not the run's.
  saved.clear_resume();
  saved.clear_resume_if_exists();
  saved.clear_resume_from();
  saved.clear_eval_only();
  saved.clear_overwrite_output_dir();
  saved.clear_dry_run();
  // Every field, zeros included: read back on top of the defaults, an
  // explicit 0 (--eval_every=0) must stay 0. The invocation's own fields
  // are left out (they read back as their defaults).
  std::string text;
  for (absl::string_view line : absl::StrSplit(ConfigToText(saved), '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "resume") || absl::StartsWith(line, "eval_only:") ||
        absl::StartsWith(line, "overwrite_output_dir:") ||
        absl::StartsWith(line, "dry_run:")) {
      continue;
    }
    absl::StrAppend(&text, line, "\n");
  }
  return absl::StrCat(
      "# The config of the run whose checkpoints are in this folder, as train resolved it.\n"
      "# train --resume_from=<this folder> continues the run with it (flags given then\n"
      "# change it); add --eval_only to evaluate the run's latest checkpoint.\n",
      text);
}

absl::StatusOr<std::string> SaveRunConfig(const TrainConfig& config) {
  TrainConfig saved = config;
  const std::string tokenizer =
      absl::StrCat(config.checkpoint_dir(), "/", kTokenizerFileName);
  if (!config.data().tokenizer_model().empty() &&
      std::filesystem::absolute(config.data().tokenizer_model()) !=
          std::filesystem::absolute(tokenizer)) {
    std::string model;
    if (auto s = ReadWholeFile(config.data().tokenizer_model(), &model); !s.ok()) return s;
    if (auto s = WriteFileAtomic(tokenizer, model); !s.ok()) return s;
    // Absolute: --config reads it back from any directory.
    saved.mutable_data()->set_tokenizer_model(std::filesystem::absolute(tokenizer).string());
  }
  const std::string path = absl::StrCat(config.checkpoint_dir(), "/", kRunConfigFileName);
  if (auto s = WriteFileAtomic(path, RunConfigText(saved)); !s.ok()) return s;
  return path;
}

}  // namespace mnt::trainer

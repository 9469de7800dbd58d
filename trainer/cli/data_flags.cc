#include "trainer/cli/data_flags.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace mnt::trainer {
namespace {

struct DataFlag {
  const char* flag;
  const char* dataset;  // the dataset it is for
  const std::string& (DataConfig::*value)() const;
  bool names_dataset;  // given alone, it chooses the dataset
};

const std::vector<DataFlag>& DataFlags() {
  static const auto* const flags = new std::vector<DataFlag>{
      {"text_path", "text", &DataConfig::text_path, true},
      {"train_shards", "shards", &DataConfig::train_shards, true},
      {"val_shards", "shards", &DataConfig::val_shards, false},
      {"train_images", "idx", &DataConfig::train_images, true},
      {"train_labels", "idx", &DataConfig::train_labels, false},
      {"test_images", "idx", &DataConfig::test_images, false},
      {"test_labels", "idx", &DataConfig::test_labels, false},
  };
  return *flags;
}

}  // namespace

std::string ApplyDatasetOfDataFlags(const std::function<bool(const std::string&)>& given,
                                    TrainConfig* c) {
  if (given("dataset")) return "";
  std::string chosen;
  for (const DataFlag& f : DataFlags()) {
    if (!f.names_dataset || (c->data().*f.value)().empty()) continue;
    if (!chosen.empty() && chosen != f.dataset) return "";  // two datasets: refused later
    chosen = f.dataset;
  }
  if (chosen.empty() || chosen == c->data().dataset()) return "";
  c->mutable_data()->set_dataset(chosen);
  return absl::StrCat("--dataset=", chosen);
}

absl::Status CheckDataFlagsFitDataset(const TrainConfig& c) {
  for (const DataFlag& f : DataFlags()) {
    if ((c.data().*f.value)().empty() || c.data().dataset() == f.dataset) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "--", f.flag, " is for --dataset=", f.dataset, " but this run trains on --dataset=",
        c.data().dataset(), ": drop --dataset to train on ", f.flag == std::string("text_path")
                                                                  ? "the text"
                                                                  : "those files",
        ", or drop --", f.flag));
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer

// The data flags say which dataset they are for: `--text_path=notes.txt`
// alone trains on that text (as --dataset=text), and a data flag given for
// another dataset than the run's is refused instead of silently ignored
// (`--dataset=fortunes --text_path=notes.txt` used to train on fortunes).
#ifndef MANTISSA_TRAINER_CLI_DATA_FLAGS_H_
#define MANTISSA_TRAINER_CLI_DATA_FLAGS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

// When the user did not choose --dataset (`given`), the one their data
// flags name: --text_path -> text, --train_shards -> shards, --train_images
// -> idx. Returns "--dataset=<d>" when it chose one, else "". Data flags of
// two datasets at once are left for CheckDataFlagsFitDataset to refuse.
std::string ApplyDatasetOfDataFlags(const std::function<bool(const std::string&)>& given,
                                    TrainConfig* config);

// InvalidArgument naming the first data flag that belongs to another dataset
// than config.data().dataset() and what to do.
absl::Status CheckDataFlagsFitDataset(const TrainConfig& config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_DATA_FLAGS_H_

// Defaults that depend on the chosen model and device, applied to fields the
// user left alone: `--model=cnn` alone trains on digits, and the GPT main job
// is sized for the device found (gpt2-tiny on the CPU, gpt2-124m on a GPU).
#ifndef MANTISSA_TRAINER_CLI_MODEL_DEFAULTS_H_
#define MANTISSA_TRAINER_CLI_MODEL_DEFAULTS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "plugins/abi/mantissa.h"
#include "trainer/config/config.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// `given(flag)` tells whether the user set that flag (on the command line or
// through --config); those fields are never touched. `device` is the
// resolved device ("cpu", "cuda", ...). Returns one line per change made, for
// the log.
std::vector<std::string> ApplyModelDefaults(
    const std::string& device, const std::function<bool(const std::string&)>& given,
    TrainConfig* config);

// The kinds of data model `name` declares it trains on (ABI 1.12,
// MNT_ModelData_Extension); empty when it declares none (or cannot be
// loaded: the run reports that later, in its own words).
using DeclaredDataKinds = std::function<std::vector<MNT_DataKind>(const std::string& model)>;

// The model's declaration against the dataset's kind (digits: images; idx:
// images or feature vectors, as its file says; fortunes, shards, text:
// token sequences). A mismatch is refused naming what the model takes and
// the datasets of those kinds, and which of `models` (the ones available,
// sorted) would take this dataset; a model that declares nothing is left
// to its Model_Create.
absl::Status CheckModelTakesDataset(const TrainConfig& config, const DeclaredDataKinds& declared,
                                    const std::vector<std::string>& models);
// The same with the models of `registry` (their declarations, loaded now).
absl::Status CheckModelTakesDataset(const TrainConfig& config, PluginRegistry* registry);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_MODEL_DEFAULTS_H_

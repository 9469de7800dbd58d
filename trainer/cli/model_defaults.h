// Defaults that depend on the chosen model and device, applied to fields the
// user left alone: `--model=cnn` alone trains on digits, and the GPT main job
// is sized for the device found (gpt2-tiny on the CPU, gpt2-124m on a GPU).
#ifndef MANTISSA_TRAINER_CLI_MODEL_DEFAULTS_H_
#define MANTISSA_TRAINER_CLI_MODEL_DEFAULTS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

// `given(flag)` tells whether the user set that flag (on the command line or
// through --config); those fields are never touched. `device` is the
// resolved device ("cpu", "cuda", ...). Returns one line per change made, for
// the log.
std::vector<std::string> ApplyModelDefaults(
    const std::string& device, const std::function<bool(const std::string&)>& given,
    TrainConfig* config);

// The in-tree models train on different kinds of data: mlp and cnn on
// labelled images (digits, idx), gpt2 on token sequences (fortunes, shards,
// text). A mismatch is refused naming what the model accepts; a model this
// table does not know (a third-party plugin) is left to its Model_Create.
absl::Status CheckModelTakesDataset(const TrainConfig& config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_MODEL_DEFAULTS_H_

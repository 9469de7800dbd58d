// Mantissa MLP model: its option string.
//   hidden=128:64       hidden widths, ':'-separated (default 128:128)
//   activation=relu|gelu  (default relu; gelu is GPT-2's tanh approximation)
//   init=he|xavier|lecun  weight std sqrt(2/fan_in) | sqrt(2/(fan_in+fan_out))
//                         | sqrt(1/fan_in); default he for relu, lecun for gelu
#ifndef MANTISSA_MODELS_MLP_MLP_OPTIONS_H_
#define MANTISSA_MODELS_MLP_MLP_OPTIONS_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/status.h"

namespace mnt::mlp {

enum class WeightInit { kHe, kXavier, kLecun };

struct MlpOptions {
  std::vector<int64_t> hidden = {128, 128};
  MNT_Activation activation = MNT_ACTIVATION_RELU;
  WeightInit init = WeightInit::kHe;
};

// Widths must be in [1, kMaxWidth]; at most kMaxHiddenLayers of them.
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr size_t kMaxHiddenLayers = 64;

sdk::Status ParseMlpOptions(const char* text, MlpOptions* out);

// Std of the NORMAL init of a [fan_in, fan_out] weight.
float WeightInitStd(WeightInit init, int64_t fan_in, int64_t fan_out);

}  // namespace mnt::mlp

#endif  // MANTISSA_MODELS_MLP_MLP_OPTIONS_H_

// Mantissa precision plugins: the fp8 precision's options and the scaling
// recipe they give (ABI 1.10, MNT_Precision_GetScalingRecipe), after NVIDIA
// Transformer Engine's DelayedScaling: HYBRID format (E4M3 forward, E5M2
// output gradients), amax history of 1024 reduced by max, margin 0, fast
// accumulation in forward GEMMs. One parser serves Precision_GetScalingRecipe
// and LossScaler_Create's precision_options, so both accept and refuse the
// same strings.
#ifndef MANTISSA_PLUGINS_PRECISIONS_SCALING_RECIPE_H_
#define MANTISSA_PLUGINS_PRECISIONS_SCALING_RECIPE_H_

#include <cstdint>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/status.h"

namespace mnt::precision {

struct ScalingRecipeConfig {
  static constexpr int32_t kDefaultHistoryLength = 1024;  // TE's amax_history_len
  static constexpr int32_t kMaxHistoryLength = 65536;
  static constexpr int32_t kMaxMargin = 64;

  MNT_ScalingRecipe recipe = MNT_SCALING_RECIPE_DELAYED;
  MNT_DType forward_dtype = MNT_DTYPE_F8_E4M3;   // format=hybrid
  MNT_DType backward_dtype = MNT_DTYPE_F8_E5M2;
  // DELAYED's; CURRENT has no history and reports 1, MOST_RECENT (its
  // scale comes from the pass's own amax) and calibrate 0.
  int32_t history_length = kDefaultHistoryLength;
  MNT_AmaxAlgo amax_algo = MNT_AMAX_ALGO_MAX;
  int32_t margin = 0;
  bool fast_accumulation_forward = true;
  bool calibrate = true;
};

// Parses the fp8 precision's options on top of the defaults:
//   format=hybrid|e4m3        hybrid: E4M3 forward, E5M2 output gradients;
//                             e4m3: E4M3 for both
//   history=N                 amax history length, 1..65536 (DELAYED)
//   algo=max|most_recent      how the history is reduced (DELAYED)
//   margin=M                  scales 2^M below the format's maximum, 0..64
//   recipe=delayed|current
//   fast_accumulation=0|1     forward GEMMs only
//   calibrate=0|1             one amax-only pass before step 1 (DELAYED)
// NULL or "" gives the defaults. Unknown keys, malformed or out-of-range
// values, and history/algo/calibrate with recipe=current are
// InvalidArgument errors naming the key and value; `precision_name` names
// the plugin in them ("fp8 precision options: ...").
sdk::Status ParseScalingRecipe(const char* precision_options,
                               const char* precision_name,
                               ScalingRecipeConfig* out);

// Fills the outs of MNT_Precision_GetScalingRecipe_Args from `config`.
void FillScalingRecipeArgs(const ScalingRecipeConfig& config,
                           MNT_Precision_GetScalingRecipe_Args* args);

}  // namespace mnt::precision

#endif  // MANTISSA_PLUGINS_PRECISIONS_SCALING_RECIPE_H_

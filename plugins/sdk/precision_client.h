// Mantissa plugin SDK: the stateless questions a host asks a precision
// plugin (which dtype each tensor role is stored in, how each op class
// computes, what a parameter costs, since ABI 1.10 how FP8 scales evolve),
// without building Args by hand.
#ifndef MANTISSA_PLUGINS_SDK_PRECISION_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_PRECISION_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::sdk {

// A view of a loaded precision plugin; owns nothing. The answers are the
// ABI's own out-structs, filled in by the plugin.
class PrecisionClient {
 public:
  PrecisionClient() = default;
  explicit PrecisionClient(const MNT_Plugin_Api* plugin)
      : plugin_(plugin), api_(plugin->precision) {}

  const MNT_Plugin_Api* plugin() const { return plugin_; }

  // Dtypes of every tensor role, the GEMM operand format and the default
  // loss scaling.
  Status GetPolicy(MNT_Precision_GetPolicy_Args* policy) const {
    *policy = {};
    policy->struct_size = MNT_Precision_GetPolicy_Args_STRUCT_SIZE;
    return StatusFromPluginError(plugin_, api_->Precision_GetPolicy(policy));
  }

  // Storage, compute and accumulation formats of one op class.
  Status GetOpClassPolicy(MNT_OpClass op_class,
                          MNT_Precision_GetOpClassPolicy_Args* policy) const {
    *policy = {};
    policy->struct_size = MNT_Precision_GetOpClassPolicy_Args_STRUCT_SIZE;
    policy->op_class = op_class;
    return StatusFromPluginError(plugin_,
                                 api_->Precision_GetOpClassPolicy(policy));
  }

  // Bytes per parameter for an optimizer keeping `optimizer_state_slots`
  // fp32-sized tensors per parameter (SGD 1, AdamW 2).
  Status GetMemoryPlan(int32_t optimizer_state_slots,
                       MNT_Precision_GetMemoryPlan_Args* plan) const {
    *plan = {};
    plan->struct_size = MNT_Precision_GetMemoryPlan_Args_STRUCT_SIZE;
    plan->optimizer_state_slots = optimizer_state_slots;
    return StatusFromPluginError(plugin_, api_->Precision_GetMemoryPlan(plan));
  }

  // Whether the plugin has Precision_GetScalingRecipe (ABI 1.10): its table
  // is long enough to hold it and it is not NULL.
  // (A source built for a minor before 1.10 sees a table without it.)
  bool HasScalingRecipe() const {
#if MNT_ABI_MINOR >= 10
    return api_ != nullptr &&
           MNT_HAS_FIELD(api_, MNT_Precision_Api, Precision_GetScalingRecipe) &&
           api_->Precision_GetScalingRecipe != nullptr;
#else
    return false;
#endif
  }

  // How the plugin's FP8 scales evolve for its options `options` (as
  // --precision_options gives them to LossScaler_Create). A plugin without
  // Precision_GetScalingRecipe (before 1.10, or NULL) has no scaled formats:
  // `out` is then all zeros but struct_size, recipe MNT_SCALING_RECIPE_NONE,
  // and nothing is called. The answer is the plugin's, unchecked
  // (CheckScalingRecipe checks it); out->precision_options is NULL on
  // return (it was borrowed for the call).
  Status GetScalingRecipe(const std::string& options,
                          MNT_Precision_GetScalingRecipe_Args* out) const {
    *out = {};
    out->struct_size = MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE;
    out->recipe = MNT_SCALING_RECIPE_NONE;
    if (!HasScalingRecipe()) return Status::Ok();
#if MNT_ABI_MINOR >= 10
    out->precision_options = options.c_str();
    Status s = StatusFromPluginError(plugin_, api_->Precision_GetScalingRecipe(out));
    out->precision_options = nullptr;
    return s;
#else
    (void)options;
    return Status::Ok();
#endif
  }

 private:
  const MNT_Plugin_Api* plugin_ = nullptr;
  const MNT_Precision_Api* api_ = nullptr;
};

// The ranges mnt_precision.h gives a Precision_GetScalingRecipe answer: a
// known recipe; for DELAYED and CURRENT, FP8 forward and backward dtypes
// and margin >= 0; for DELAYED, history_length >= 1 and a known amax_algo.
// The fields NONE and CURRENT do not use are not looked at.
inline Status CheckScalingRecipe(const MNT_Precision_GetScalingRecipe_Args& r) {
  const std::optional<MNT_ScalingRecipe> recipe = ReadEnum(r.recipe);
  if (!recipe) {
    return InvalidArgument(
        Format("Precision_GetScalingRecipe: unknown recipe %d", RawEnum(r.recipe)));
  }
  if (*recipe == MNT_SCALING_RECIPE_NONE) return Status::Ok();
  if (!IsFp8(r.forward_dtype) || !IsFp8(r.backward_dtype)) {
    return InvalidArgument(Format(
        "Precision_GetScalingRecipe: forward_dtype %s and backward_dtype %s must be "
        "f8_e4m3 or f8_e5m2",
        DTypeName(r.forward_dtype), DTypeName(r.backward_dtype)));
  }
  if (r.margin < 0) {
    return InvalidArgument(
        Format("Precision_GetScalingRecipe: margin %d is negative", r.margin));
  }
  if (*recipe == MNT_SCALING_RECIPE_DELAYED) {
    if (r.history_length < 1) {
      return InvalidArgument(Format(
          "Precision_GetScalingRecipe: DELAYED with history_length %d (must be >= 1)",
          r.history_length));
    }
    const std::optional<MNT_AmaxAlgo> algo = ReadEnum(r.amax_algo);
    if (!algo || *algo == MNT_AMAX_ALGO_INVALID) {
      return InvalidArgument(Format(
          "Precision_GetScalingRecipe: DELAYED with amax_algo %d (not MAX or MOST_RECENT)",
          RawEnum(r.amax_algo)));
    }
  }
  return Status::Ok();
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_PRECISION_CLIENT_H_

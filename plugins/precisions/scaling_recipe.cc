#include "plugins/precisions/scaling_recipe.h"

#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

#include "plugins/sdk/options.h"

namespace mnt::precision {
namespace {

// A 0|1 switch: anything else names the key and the value.
sdk::Status GetSwitch(const sdk::Options& opts, const std::string& context,
                      const char* key, bool* out) {
  std::string text;
  MNT_RETURN_IF_ERROR(opts.GetString(key, &text));
  if (!opts.Has(key)) return sdk::Status::Ok();
  if (text != "0" && text != "1") {
    return sdk::InvalidArgument(sdk::Format("%s: %s='%s' must be 0 or 1",
                                            context.c_str(), key, text.c_str()));
  }
  *out = text == "1";
  return sdk::Status::Ok();
}

// An integer in [lo, hi]; `what` says what it is for.
sdk::Status GetBoundedInt(const sdk::Options& opts, const std::string& context,
                          const char* key, long long lo, long long hi,
                          const char* what, int32_t* out) {
  long long v = *out;
  MNT_RETURN_IF_ERROR(opts.GetInt(key, &v));
  if (v < lo || v > hi) {
    return sdk::InvalidArgument(sdk::Format("%s: %s=%lld must be in [%lld, %lld] (%s)",
                                            context.c_str(), key, v, lo, hi, what));
  }
  *out = static_cast<int32_t>(v);
  return sdk::Status::Ok();
}

// One of `choices` (name, value); anything else names the key, the value
// and `listed` (the names as the message shows them).
template <typename T>
sdk::Status GetChoice(const sdk::Options& opts, const std::string& context, const char* key,
                      std::initializer_list<std::pair<const char*, T>> choices,
                      const char* listed, T* out) {
  std::string text;
  MNT_RETURN_IF_ERROR(opts.GetString(key, &text));
  if (!opts.Has(key)) return sdk::Status::Ok();
  for (const auto& [name, value] : choices) {
    if (text == name) {
      *out = value;
      return sdk::Status::Ok();
    }
  }
  return sdk::InvalidArgument(sdk::Format("%s: %s='%s' is not one of %s", context.c_str(), key,
                                          text.c_str(), listed));
}

}  // namespace

sdk::Status ParseScalingRecipe(const char* precision_options,
                               const char* precision_name,
                               ScalingRecipeConfig* out) {
  const std::string context = std::string(precision_name) + " precision options";
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(precision_options, context.c_str(), &opts));
  MNT_RETURN_IF_ERROR(opts.CheckKnown({"format", "history", "algo", "margin", "recipe",
                                       "fast_accumulation", "calibrate"}));
  ScalingRecipeConfig config;

  MNT_RETURN_IF_ERROR(GetChoice<MNT_ScalingRecipe>(
      opts, context, "recipe",
      {{"delayed", MNT_SCALING_RECIPE_DELAYED}, {"current", MNT_SCALING_RECIPE_CURRENT}},
      "delayed, current", &config.recipe));
  // Forward (inputs, weights) and backward (output gradients) formats.
  using Formats = std::pair<MNT_DType, MNT_DType>;
  Formats formats{config.forward_dtype, config.backward_dtype};
  MNT_RETURN_IF_ERROR(GetChoice<Formats>(
      opts, context, "format",
      {{"hybrid", {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2}},
       {"e4m3", {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E4M3}}},
      "hybrid (E4M3 forward, E5M2 gradients), e4m3", &formats));
  std::tie(config.forward_dtype, config.backward_dtype) = formats;
  MNT_RETURN_IF_ERROR(GetChoice<MNT_AmaxAlgo>(
      opts, context, "algo",
      {{"max", MNT_AMAX_ALGO_MAX}, {"most_recent", MNT_AMAX_ALGO_MOST_RECENT}},
      "max, most_recent", &config.amax_algo));
  MNT_RETURN_IF_ERROR(GetBoundedInt(opts, context, "history", 1,
                                    ScalingRecipeConfig::kMaxHistoryLength,
                                    "amax history length", &config.history_length));
  MNT_RETURN_IF_ERROR(GetBoundedInt(opts, context, "margin", 0,
                                    ScalingRecipeConfig::kMaxMargin,
                                    "scales 2^margin below the format's maximum",
                                    &config.margin));
  MNT_RETURN_IF_ERROR(GetSwitch(opts, context, "fast_accumulation",
                                &config.fast_accumulation_forward));
  MNT_RETURN_IF_ERROR(GetSwitch(opts, context, "calibrate", &config.calibrate));

  if (config.recipe == MNT_SCALING_RECIPE_CURRENT) {
    for (const char* key : {"history", "algo", "calibrate"}) {
      if (opts.Has(key)) {
        std::string value;
        MNT_RETURN_IF_ERROR(opts.GetString(key, &value));
        return sdk::InvalidArgument(sdk::Format(
            "%s: %s=%s does not apply to recipe=current (each scale comes from its "
            "tensor's own amax in the pass: no history, no calibration)",
            context.c_str(), key, value.c_str()));
      }
    }
    config.history_length = 1;
    config.amax_algo = MNT_AMAX_ALGO_MOST_RECENT;
    config.calibrate = false;
  }
  *out = config;
  return sdk::Status::Ok();
}

void FillScalingRecipeArgs(const ScalingRecipeConfig& config,
                           MNT_Precision_GetScalingRecipe_Args* args) {
  args->recipe = config.recipe;
  args->forward_dtype = config.forward_dtype;
  args->backward_dtype = config.backward_dtype;
  args->history_length = config.history_length;
  args->amax_algo = config.amax_algo;
  args->margin = config.margin;
  args->fast_accumulation_forward = config.fast_accumulation_forward ? 1 : 0;
  args->calibrate = config.calibrate ? 1 : 0;
}

}  // namespace mnt::precision

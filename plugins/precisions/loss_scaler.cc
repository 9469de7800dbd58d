#include "plugins/precisions/loss_scaler.h"

#include <cmath>
#include <string>

#include "plugins/sdk/options.h"

namespace mnt::precision {
namespace {

const char* ModeName(MNT_LossScaling mode) {
  switch (mode) {
    case MNT_LOSS_SCALING_DYNAMIC: return "dynamic";
    case MNT_LOSS_SCALING_STATIC: return "static";
    default: return "none";
  }
}

// The plugin's own options (--precision_options): hysteresis, min_scale,
// max_scale for a precision with loss scaling; none otherwise.
sdk::Status ParsePrecisionOptions(const char* text, const char* precision_name,
                                  bool supports_loss_scaling,
                                  LossScalerConfig* config) {
  const std::string context = std::string(precision_name) + " precision options";
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, context.c_str(), &opts));
  if (!supports_loss_scaling) {
    if (sdk::Status s = opts.CheckKnown({}); !s.ok()) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: %s takes no precision options (got '%s'); hysteresis, "
          "min_scale and max_scale are fp16's",
          context.c_str(), precision_name, text));
    }
    return sdk::Status::Ok();
  }
  MNT_RETURN_IF_ERROR(opts.CheckKnown({"hysteresis", "min_scale", "max_scale"}));
  long long hysteresis = config->recipe.hysteresis;
  MNT_RETURN_IF_ERROR(opts.GetInt("hysteresis", &hysteresis));
  double min_scale = config->recipe.min_scale, max_scale = 0;
  MNT_RETURN_IF_ERROR(opts.GetDouble("min_scale", &min_scale));
  MNT_RETURN_IF_ERROR(opts.GetDouble("max_scale", &max_scale));
  if (hysteresis < 1 || hysteresis > 1000000) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: hysteresis=%lld must be in [1, 1000000] (1 backs off on every "
        "overflow)", context.c_str(), hysteresis));
  }
  if (!(min_scale >= 0) || min_scale >= kFloatOverflowThreshold) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: min_scale=%g must be >= 0 and finite in fp32", context.c_str(),
        min_scale));
  }
  if (opts.Has("max_scale") &&
      (!(max_scale > 0) || max_scale >= kFloatOverflowThreshold ||
       max_scale < min_scale)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: max_scale=%g must be finite in fp32 and >= min_scale=%g",
        context.c_str(), max_scale, min_scale));
  }
  config->recipe.hysteresis = static_cast<int32_t>(hysteresis);
  config->recipe.min_scale = static_cast<float>(min_scale);
  config->recipe.max_scale = static_cast<float>(max_scale);
  return sdk::Status::Ok();
}

}  // namespace

sdk::Status ParseLossScalerConfig(const char* options,
                                  const char* precision_options,
                                  const char* precision_name,
                                  MNT_LossScaling default_mode,
                                  bool supports_loss_scaling,
                                  LossScalerConfig* out) {
  const std::string context =
      std::string(precision_name) + " loss scaler options";
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(options, context.c_str(), &opts));
  MNT_RETURN_IF_ERROR(opts.CheckKnown({"mode", "init_scale", "growth_factor",
                                       "backoff_factor", "growth_interval"}));
  LossScalerConfig config;
  config.mode = default_mode;
  std::string mode_text;
  MNT_RETURN_IF_ERROR(opts.GetString("mode", &mode_text));
  if (opts.Has("mode")) {
    if (mode_text == "dynamic") {
      config.mode = MNT_LOSS_SCALING_DYNAMIC;
    } else if (mode_text == "static") {
      config.mode = MNT_LOSS_SCALING_STATIC;
    } else if (mode_text == "none") {
      config.mode = MNT_LOSS_SCALING_NONE;
    } else {
      return sdk::InvalidArgument(sdk::Format(
          "%s: mode='%s' is not one of dynamic, static, none", context.c_str(),
          mode_text.c_str()));
    }
  }
  if (!supports_loss_scaling && config.mode != MNT_LOSS_SCALING_NONE) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: mode=%s refused: loss scaling is only for fp16; %s has fp32's "
        "range (use mode=none)",
        context.c_str(), ModeName(config.mode), precision_name));
  }
  if (!supports_loss_scaling &&
      (opts.Has("init_scale") || opts.Has("growth_factor") ||
       opts.Has("backoff_factor") || opts.Has("growth_interval"))) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s has no loss scaling, so init_scale, growth_factor, "
        "backoff_factor and growth_interval do not apply",
        context.c_str(), precision_name));
  }

  double init_scale = config.init_scale;
  MNT_RETURN_IF_ERROR(opts.GetDouble("init_scale", &init_scale));
  MNT_RETURN_IF_ERROR(opts.GetDouble("growth_factor", &config.recipe.growth_factor));
  MNT_RETURN_IF_ERROR(opts.GetDouble("backoff_factor", &config.recipe.backoff_factor));
  long long growth_interval = config.recipe.growth_interval;
  MNT_RETURN_IF_ERROR(opts.GetInt("growth_interval", &growth_interval));

  if (!(init_scale > 0) || init_scale >= kFloatOverflowThreshold) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: init_scale=%g must be positive and finite in fp32",
        context.c_str(), init_scale));
  }
  if (!(config.recipe.growth_factor > 1)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: growth_factor=%g must be greater than 1", context.c_str(),
        config.recipe.growth_factor));
  }
  if (!(config.recipe.backoff_factor > 0 && config.recipe.backoff_factor < 1)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: backoff_factor=%g must be in (0, 1)", context.c_str(),
        config.recipe.backoff_factor));
  }
  if (growth_interval < 1) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: growth_interval=%lld must be at least 1", context.c_str(),
        growth_interval));
  }
  config.init_scale = static_cast<float>(init_scale);
  if (!(config.init_scale > 0)) {  // underflowed to 0 in fp32
    return sdk::InvalidArgument(sdk::Format(
        "%s: init_scale=%g underflows to 0 in fp32", context.c_str(),
        init_scale));
  }
  config.recipe.growth_interval = growth_interval;
  MNT_RETURN_IF_ERROR(ParsePrecisionOptions(precision_options, precision_name,
                                            supports_loss_scaling, &config));
  if (config.mode == MNT_LOSS_SCALING_DYNAMIC &&
      (config.init_scale < config.recipe.min_scale ||
       (config.recipe.max_scale > 0 && config.init_scale > config.recipe.max_scale))) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: init_scale=%g is outside [min_scale, max_scale] = [%g, %g]",
        context.c_str(), static_cast<double>(config.init_scale),
        static_cast<double>(config.recipe.min_scale),
        static_cast<double>(config.recipe.max_scale)));
  }
  *out = config;
  return sdk::Status::Ok();
}

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config) {
  state_.scale =
      config_.mode == MNT_LOSS_SCALING_NONE ? 1.0f : config_.init_scale;
}

UpdateResult LossScaler::Update(bool found_inf) {
  UpdateResult result;
  switch (config_.mode) {
    case MNT_LOSS_SCALING_NONE:
      break;
    case MNT_LOSS_SCALING_STATIC:
      if (found_inf) {
        result.skip_step = true;
        ++state_.skipped_steps;
      }
      break;
    case MNT_LOSS_SCALING_DYNAMIC:
      if (found_inf) {
        result.skip_step = true;
        ++state_.skipped_steps;
      }
      UpdateLossScale(found_inf, config_.recipe, &state_.scale,
                      &state_.growth_tracker, &state_.hysteresis_tracker);
      break;
  }
  result.new_scale = state_.scale;
  return result;
}

sdk::Status LossScaler::SetState(const LossScalerSnapshot& state) {
  if (!std::isfinite(state.scale) || !(state.scale > 0)) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: scale=%g must be positive and finite",
        static_cast<double>(state.scale)));
  }
  if (state.skipped_steps < 0) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: skipped_steps=%lld is negative",
        static_cast<long long>(state.skipped_steps)));
  }
  const int64_t max_tracker =
      config_.mode == MNT_LOSS_SCALING_DYNAMIC ? config_.recipe.growth_interval - 1
                                               : 0;
  if (state.growth_tracker < 0 || state.growth_tracker > max_tracker) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: growth_tracker=%lld is outside [0, %lld] for "
        "mode=%s",
        static_cast<long long>(state.growth_tracker),
        static_cast<long long>(max_tracker), ModeName(config_.mode)));
  }
  const int64_t max_hysteresis =
      config_.mode == MNT_LOSS_SCALING_DYNAMIC ? config_.recipe.hysteresis - 1 : 0;
  if (state.hysteresis_tracker < 0 || state.hysteresis_tracker > max_hysteresis) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: hysteresis_tracker=%lld is outside [0, %lld] for "
        "mode=%s, hysteresis=%d",
        static_cast<long long>(state.hysteresis_tracker),
        static_cast<long long>(max_hysteresis), ModeName(config_.mode),
        config_.recipe.hysteresis));
  }
  if (config_.mode == MNT_LOSS_SCALING_NONE && state.scale != 1.0f) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: scale=%g but mode=none keeps scale 1",
        static_cast<double>(state.scale)));
  }
  if (config_.mode == MNT_LOSS_SCALING_NONE && state.skipped_steps != 0) {
    return sdk::InvalidArgument(
        "loss scaler state: mode=none never skips, but skipped_steps is not 0");
  }
  if (config_.mode == MNT_LOSS_SCALING_STATIC &&
      state.scale != config_.init_scale) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: scale=%g but mode=static keeps init_scale=%g",
        static_cast<double>(state.scale),
        static_cast<double>(config_.init_scale)));
  }
  state_ = state;
  return sdk::Status::Ok();
}

bool LossScaler::Recipe(LossScaleRecipeParams* out) const {
  if (config_.mode != MNT_LOSS_SCALING_DYNAMIC) return false;
  *out = config_.recipe;
  return true;
}

}  // namespace mnt::precision

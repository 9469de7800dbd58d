#include "plugins/precisions/loss_scaler.h"

#include <cmath>
#include <string>

#include "plugins/sdk/options.h"

namespace mnt::precision {
namespace {

// Doubles at or above this round to +inf when stored as float (FLT_MAX plus
// half an ulp; the tie rounds to the even neighbour, 2^128, i.e. inf).
constexpr double kFloatOverflowThreshold = 0x1.ffffffp+127;

// torch computes scale * factor in double (the factors are doubles) and
// stores it in the float scale; we check the range before converting so the
// conversion is always defined.
bool ScaledFitsInFloat(float scale, double factor, float* out) {
  const double v = static_cast<double>(scale) * factor;
  if (!std::isfinite(v) || std::fabs(v) >= kFloatOverflowThreshold) {
    return false;
  }
  *out = static_cast<float>(v);
  return std::isfinite(*out);
}

const char* ModeName(MNT_LossScaling mode) {
  switch (mode) {
    case MNT_LOSS_SCALING_DYNAMIC: return "dynamic";
    case MNT_LOSS_SCALING_STATIC: return "static";
    default: return "none";
  }
}

}  // namespace

sdk::Status ParseLossScalerConfig(const char* options,
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
  MNT_RETURN_IF_ERROR(opts.GetDouble("growth_factor", &config.growth_factor));
  MNT_RETURN_IF_ERROR(opts.GetDouble("backoff_factor", &config.backoff_factor));
  long long growth_interval = config.growth_interval;
  MNT_RETURN_IF_ERROR(opts.GetInt("growth_interval", &growth_interval));

  if (!(init_scale > 0) || init_scale >= kFloatOverflowThreshold) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: init_scale=%g must be positive and finite in fp32",
        context.c_str(), init_scale));
  }
  if (!(config.growth_factor > 1)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: growth_factor=%g must be greater than 1", context.c_str(),
        config.growth_factor));
  }
  if (!(config.backoff_factor > 0 && config.backoff_factor < 1)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: backoff_factor=%g must be in (0, 1)", context.c_str(),
        config.backoff_factor));
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
  config.growth_interval = growth_interval;
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
        float backed_off;
        // A backoff in (0,1) never overflows; it may underflow to 0 after
        // ~150 consecutive infs, which torch allows as well.
        if (ScaledFitsInFloat(state_.scale, config_.backoff_factor,
                              &backed_off)) {
          state_.scale = backed_off;
        }
        state_.growth_tracker = 0;
      } else {
        const int64_t successful = state_.growth_tracker + 1;
        if (successful == config_.growth_interval) {
          float grown;
          if (ScaledFitsInFloat(state_.scale, config_.growth_factor, &grown)) {
            state_.scale = grown;
          }
          state_.growth_tracker = 0;
        } else {
          state_.growth_tracker = successful;
        }
      }
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
      config_.mode == MNT_LOSS_SCALING_DYNAMIC ? config_.growth_interval - 1
                                               : 0;
  if (state.growth_tracker < 0 || state.growth_tracker > max_tracker) {
    return sdk::InvalidArgument(sdk::Format(
        "loss scaler state: growth_tracker=%lld is outside [0, %lld] for "
        "mode=%s",
        static_cast<long long>(state.growth_tracker),
        static_cast<long long>(max_tracker), ModeName(config_.mode)));
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

}  // namespace mnt::precision

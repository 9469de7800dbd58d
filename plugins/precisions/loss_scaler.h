// Mantissa precision plugins: the loss-scaling state machine, with PyTorch
// GradScaler's semantics and defaults (torch._amp_update_scale_) plus
// DeepSpeed's hysteresis and min_loss_scale and Apex's max_loss_scale, all
// from the one formula in plugins/sdk/loss_scale_math.h. Its dynamic mode is
// declared to the host as MNT_LOSS_SCALE_RECIPE_DYNAMIC (ABI 1.5).
#ifndef MANTISSA_PLUGINS_PRECISIONS_LOSS_SCALER_H_
#define MANTISSA_PLUGINS_PRECISIONS_LOSS_SCALER_H_

#include <cstdint>

#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/loss_scale_math.h"
#include "plugins/sdk/status.h"

namespace mnt::precision {

// Defaults: the recipe's (GradScaler's), with hysteresis 1, no floor and no
// ceiling.
struct LossScalerConfig {
  MNT_LossScaling mode = MNT_LOSS_SCALING_NONE;
  float init_scale = LossScaleRecipeParams::kDefaultInitScale;
  // The dynamic update's parameters (plugins/sdk/loss_scale_math.h).
  LossScaleRecipeParams recipe;
};

// Parses the loss-scaler options "mode=dynamic|static|none,init_scale=..,
// growth_factor=..,backoff_factor=..,growth_interval=.." on top of
// `default_mode`, and the plugin's own `precision_options`
// ("hysteresis=..,min_scale=..,max_scale=..", fp16 only).
// `precision_name` names the plugin in messages; when
// `supports_loss_scaling` is false, dynamic and static modes and every
// precision option are refused.
sdk::Status ParseLossScalerConfig(const char* options,
                                  const char* precision_options,
                                  const char* precision_name,
                                  MNT_LossScaling default_mode,
                                  bool supports_loss_scaling,
                                  LossScalerConfig* out);

struct LossScalerSnapshot {
  float scale = 1.0f;
  int64_t growth_tracker = 0;
  int64_t skipped_steps = 0;
  int64_t hysteresis_tracker = 0;  // overflows in a row not backed off
};

struct UpdateResult {
  bool skip_step = false;
  float new_scale = 1.0f;
};

class LossScaler {
 public:
  // `config` must come from ParseLossScalerConfig (already validated).
  explicit LossScaler(const LossScalerConfig& config);

  // Dynamic: UpdateLossScale (found_inf -> skip, and back off unless
  // hysteresis absorbs it; otherwise count a clean step and grow after
  // growth_interval of them, never to inf). Static: skip on found_inf.
  UpdateResult Update(bool found_inf);

  LossScalerSnapshot state() const { return state_; }
  // Validates: finite positive scale; trackers in [0, growth_interval) and
  // [0, hysteresis); non-negative skipped_steps; none/static modes keep
  // their fixed scale.
  sdk::Status SetState(const LossScalerSnapshot& state);

  // True (and `out` filled) when the update is the declared dynamic recipe.
  bool Recipe(LossScaleRecipeParams* out) const;

  const LossScalerConfig& config() const { return config_; }

 private:
  LossScalerConfig config_;
  LossScalerSnapshot state_;
};

}  // namespace mnt::precision

#endif  // MANTISSA_PLUGINS_PRECISIONS_LOSS_SCALER_H_

// Mantissa precision plugins: the loss-scaling state machine, with PyTorch
// GradScaler's semantics and defaults (torch._amp_update_scale_).
#ifndef MANTISSA_PLUGINS_PRECISIONS_LOSS_SCALER_H_
#define MANTISSA_PLUGINS_PRECISIONS_LOSS_SCALER_H_

#include <cstdint>

#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/status.h"

namespace mnt::precision {

struct LossScalerConfig {
  MNT_LossScaling mode = MNT_LOSS_SCALING_NONE;
  float init_scale = 65536.0f;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// Parses "mode=dynamic|static|none,init_scale=..,growth_factor=..,
// backoff_factor=..,growth_interval=.." on top of `default_mode`.
// `precision_name` names the plugin in messages; when
// `supports_loss_scaling` is false, dynamic and static modes are refused.
sdk::Status ParseLossScalerConfig(const char* options,
                                  const char* precision_name,
                                  MNT_LossScaling default_mode,
                                  bool supports_loss_scaling,
                                  LossScalerConfig* out);

struct LossScalerSnapshot {
  float scale = 1.0f;
  int64_t growth_tracker = 0;
  int64_t skipped_steps = 0;
};

struct UpdateResult {
  bool skip_step = false;
  float new_scale = 1.0f;
};

class LossScaler {
 public:
  // `config` must come from ParseLossScalerConfig (already validated).
  explicit LossScaler(const LossScalerConfig& config);

  // GradScaler.update(): found_inf -> skip and back off; otherwise count a
  // clean step and grow after growth_interval of them, never to inf.
  UpdateResult Update(bool found_inf);

  LossScalerSnapshot state() const { return state_; }
  // Validates: finite positive scale; tracker in [0, growth_interval);
  // non-negative skipped_steps; none/static modes keep their fixed scale.
  sdk::Status SetState(const LossScalerSnapshot& state);

  const LossScalerConfig& config() const { return config_; }

 private:
  LossScalerConfig config_;
  LossScalerSnapshot state_;
};

}  // namespace mnt::precision

#endif  // MANTISSA_PLUGINS_PRECISIONS_LOSS_SCALER_H_

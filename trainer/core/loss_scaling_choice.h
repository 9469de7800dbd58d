// Where a run's loss scaling runs, decided once at start from
// --device_loss_scaling (auto|on|off), what the backend can do and what the
// precision plugin's scaler declares (LossScaler_GetRecipe, ABI 1.5), and
// the LossScaling that does it.
#ifndef MANTISSA_TRAINER_CORE_LOSS_SCALING_CHOICE_H_
#define MANTISSA_TRAINER_CORE_LOSS_SCALING_CHOICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/loss_scaler_client.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/loss_scaling.h"
#include "trainer/core/optimizer.h"

namespace mnt::trainer {

struct LossScalingPlan {
  // The step's scalars (scale, found_inf, clip factor, losses) stay on the
  // device. A run that does not scale takes this too under `auto` (the clip
  // factor and the losses only; a sync-free step), `off` keeps the host path.
  bool on_device = false;
  // The declared recipe in AMP_UPDATE_SCALE's form (device path only).
  MNT_AmpUpdateScaleParams amp{};
  // One line for the console: where the scaling runs and why.
  std::string description;
  // The declared recipe's floor (min_scale; 0: none or no recipe), so a
  // warning about skipped steps can tell a floor from an overflow.
  double min_scale = 0;
};

// The device path needs a scaler that declares the dynamic recipe (no
// probe: a plugin that declares nothing keeps its own LossScaler_Update), a
// backend with AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.5 for hysteresis,
// a floor or a ceiling; for AdamW, ABI >= 1.4 for ADAMW_STEP's device step
// counter), factors exact in fp32 and an interval that fits I32. `auto` (or
// "") takes it when it can; `on` refuses a run that cannot in one line;
// `off` never. `scaling_active`: the run scales its loss at all; a run that
// does not takes the device path under `auto` when the backend has
// CLIP_COEFFICIENT (and, for AdamW, ABI >= 1.4), with no description.
absl::StatusOr<LossScalingPlan> PlanLossScaling(
    const mantissa::TrainConfig& config, const sdk::BackendInstance& backend,
    const std::string& device_name, const sdk::LossScalerClient& scaler,
    const std::string& precision_name, bool scaling_active);

// The implementation `plan` chose, loaded from the plugin's scaler state.
// `optimizer` must have been created with skips_on_device = plan.on_device.
absl::StatusOr<std::unique_ptr<LossScaling>> MakeLossScaling(
    const LossScalingPlan& plan, const LossScalingContext& context,
    bool scaling_active, Optimizer* optimizer, const std::string& device_name);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LOSS_SCALING_CHOICE_H_

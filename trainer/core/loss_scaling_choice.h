// Where a run's loss scaling runs, decided once at start from
// --device_loss_scaling (auto|on|off) and what the backend and the
// precision plugin can do, and the LossScaling that does it.
#ifndef MANTISSA_TRAINER_CORE_LOSS_SCALING_CHOICE_H_
#define MANTISSA_TRAINER_CORE_LOSS_SCALING_CHOICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_instance.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/loss_scaling.h"
#include "trainer/core/optimizer.h"

namespace mnt::trainer {

struct LossScalingPlan {
  bool on_device = false;
  // The scaler's parameters in AMP_UPDATE_SCALE's form (device path only).
  MNT_AmpUpdateScaleParams amp{};
};

// The device path needs dynamic scaling, a backend with AMP_UPDATE_SCALE and
// CLIP_COEFFICIENT (and, for AdamW, ABI >= 1.4 for ADAMW_STEP's device step
// counter), factors exact in fp32, and a precision plugin whose scaler
// follows that formula (device_formula_probe.h). `auto` (or "") takes it
// when it can; `on` refuses a run that cannot in one line; `off` never.
absl::StatusOr<LossScalingPlan> PlanLossScaling(
    const mantissa::TrainConfig& config, const sdk::BackendInstance& backend,
    const std::string& device_name, const MNT_Plugin_Api* precision_plugin,
    const std::string& precision_name, MNT_LossScaling plugin_default);

// The implementation `plan` chose, loaded from the plugin's scaler state.
// `optimizer` must have been created with skips_on_device = plan.on_device.
absl::StatusOr<std::unique_ptr<LossScaling>> MakeLossScaling(
    const LossScalingPlan& plan, const LossScalingContext& context,
    bool scaling_active, Optimizer* optimizer, const std::string& device_name);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LOSS_SCALING_CHOICE_H_

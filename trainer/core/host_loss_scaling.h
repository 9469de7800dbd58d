// Loss scaling decided on the host, step by step: the gradients are unscaled
// and checked on the device, found_inf is read back, and the precision
// plugin's LossScaler_Update says whether to skip and what the next scale
// is. A skipped step runs no optimizer kernel. Also the path of runs that
// do not scale at all (fp32, tf32, bf16): then only clipping remains, and a
// non-finite loss stops the run.
#ifndef MANTISSA_TRAINER_CORE_HOST_LOSS_SCALING_H_
#define MANTISSA_TRAINER_CORE_HOST_LOSS_SCALING_H_

#include "trainer/core/loss_scaling.h"

namespace mnt::trainer {

class HostLossScaling : public LossScaling {
 public:
  // `active`: the run scales its loss (LossScalingActive).
  HostLossScaling(const LossScalingContext& context, bool active)
      : c_(context), active_(active) {}

  bool on_device() const override { return false; }
  absl::StatusOr<float> StepScale() override;
  MNT_Tensor LossOutput(int64_t micro) const override;
  absl::StatusOr<double> MicroBatchLoss(int64_t micro) override;
  absl::StatusOr<OptimizerGate> UnscaleUpdateAndClip(
      float scale, const StepGradients& grads, StepMetrics* m) override;
  absl::StatusOr<bool> CompleteStepMetrics(bool wanted, StepMetrics* m) override;
  // The plugin's scaler is updated every step: nothing to carry.
  absl::Status SyncToPlugin(int64_t) override { return absl::OkStatus(); }
  absl::Status SyncFromPlugin() override { return absl::OkStatus(); }

 private:
  // Unscales `grads` by 1/scale and asks the plugin: skip this step?
  absl::StatusOr<bool> UnscaleAndUpdate(float scale,
                                        const std::vector<MNT_Tensor>& grads);
  // Writes clip_grad_norm_'s multiplier; the unclipped norm into m.
  absl::Status Clip(const std::vector<MNT_Tensor>& grads, StepMetrics* m);

  LossScalingContext c_;
  bool active_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_HOST_LOSS_SCALING_H_

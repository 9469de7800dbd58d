// Dynamic loss scaling kept on the device (ABI 1.4 ops), for a precision
// plugin whose scaler declares the dynamic recipe (ABI 1.5): the scale (F32),
// the growth and hysteresis trackers (I32), inv_scale and a skipped-step
// count live in device memory, and a step issues
//   FILL found_inf 0, NONFINITE_CHECK_UNSCALE with the device inv_scale,
//   AMP_UPDATE_SCALE (the declared recipe; writes the next inv_scale),
//   ADD found_inf into the skipped count, GLOBAL_NORM_SQUARED,
//   CLIP_COEFFICIENT (1 on an overflow step),
// then the optimizer ops skip on found_inf themselves. Each micro-batch's
// loss goes to its own device slot. Nothing reaches the host but the scale
// Model_Backward needs (4 bytes per step) and the values of steps a sink
// reports. The precision plugin's scaler is brought up to date at
// checkpoints and at the end of a training call (SyncToPlugin).
//
// The same class is the device path of runs that do not scale their loss
// (fp32, tf32, bf16): then only GLOBAL_NORM_SQUARED and CLIP_COEFFICIENT
// run, the optimizer never skips (AdamW still counts its steps on the
// device), and a non-finite loss stops the run when a reported step reads
// it, or at the latest at the next checkpoint or the end of the training
// call (the host path stops at once).
#ifndef MANTISSA_TRAINER_CORE_DEVICE_LOSS_SCALING_H_
#define MANTISSA_TRAINER_CORE_DEVICE_LOSS_SCALING_H_

#include <memory>
#include <string>

#include "plugins/abi/mantissa.h"
#include "trainer/core/loss_scaling.h"
#include "trainer/core/optimizer.h"

namespace mnt::trainer {

class DeviceLossScaling : public LossScaling {
 public:
  // Allocates the device state and loads it from the plugin's scaler.
  // `amp` are the scaler's parameters in AMP_UPDATE_SCALE's form; the
  // optimizer skips on the device (Optimizer::Create(..., true)).
  // `scaling_active`: the run scales its loss (else `amp` is unused).
  static absl::StatusOr<std::unique_ptr<DeviceLossScaling>> Create(
      const LossScalingContext& context, const MNT_AmpUpdateScaleParams& amp,
      Optimizer* optimizer, const std::string& device_name, bool scaling_active = true);

  bool on_device() const override { return true; }
  absl::StatusOr<float> StepScale() override;
  absl::StatusOr<MNT_Tensor> DeviceLossMultiplier() override;
  MNT_Tensor LossOutput(int64_t micro) const override;
  absl::StatusOr<double> MicroBatchLoss(int64_t) override { return 0.0; }
  absl::StatusOr<OptimizerGate> UnscaleUpdateAndClip(
      float scale, const StepGradients& grads, StepMetrics* m) override;
  absl::StatusOr<bool> CompleteStepMetrics(bool wanted, StepMetrics* m) override;
  absl::Status SyncToPlugin(int64_t steps_taken) override;
  absl::Status SyncFromPlugin() override;

 private:
  DeviceLossScaling(const LossScalingContext& context,
                    const MNT_AmpUpdateScaleParams& amp, Optimizer* optimizer,
                    const std::string& device_name, bool scaling_active)
      : c_(context),
        amp_(amp),
        optimizer_(optimizer),
        device_name_(device_name),
        active_(scaling_active) {}

  // The step's mean loss from the device slots (a read); a non-finite one
  // stops a run that does not scale, as the host path does.
  absl::StatusOr<double> ReadStepLoss();
  // The optimizer's applied-step count := `applied`, checked against AdamW's
  // device counter.
  absl::Status SyncAppliedSteps(int64_t applied);

  LossScalingContext c_;
  MNT_AmpUpdateScaleParams amp_;
  Optimizer* optimizer_;
  std::string device_name_;
  bool active_;  // the run scales its loss
  // Whether AMP_UPDATE_SCALE gets the 1.5 params and out[3].
  bool with_hysteresis() const {
    return amp_.struct_size >= MNT_AmpUpdateScaleParams_STRUCT_SIZE;
  }

  // F32 [1], I32 [1], I32 [1], F32 [1] (skipped since the last sync),
  // F32 [accum].
  sdk::DeviceBuffer scale_, growth_tracker_, hysteresis_tracker_, skipped_, loss_micro_;
  // scale * (1 / micro_batches) when there are several; else scale_ serves.
  sdk::DeviceBuffer loss_multiplier_;
  int64_t skipped_synced_ = 0;  // skipped steps already in the plugin's state
  float host_scale_ = 1.0f;     // the device scale, when host_scale_valid_
  bool host_scale_valid_ = false;
  // Not scaling: a step ran whose losses no report read yet.
  bool unread_loss_ = false;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_DEVICE_LOSS_SCALING_H_

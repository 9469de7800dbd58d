// Loss scaling as the training step sees it: one interface, with a host
// implementation (the precision plugin's LossScaler_Update decides every
// step; host_loss_scaling.h) and a device one (scale, found_inf and the clip
// factor stay on the device; device_loss_scaling.h). Which one runs is
// decided once at start (loss_scaling_choice.h); the step, the end of
// training and checkpoints call this interface and never ask which.
//
// Both give the same bits (//tests/integration:loss_scaling_test). In both,
// the precision plugin's scaler stays the source of truth for policy, for
// checkpoints and for the final report: SyncToPlugin brings it up to date.
#ifndef MANTISSA_TRAINER_CORE_LOSS_SCALING_H_
#define MANTISSA_TRAINER_CORE_LOSS_SCALING_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/loss_scaler_client.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/metrics.h"

namespace mnt::trainer {

// What either implementation works with; all borrowed, and outliving it.
struct LossScalingContext {
  const sdk::BackendClient* client = nullptr;
  // The precision plugin's scaler, created from the --loss_scale_* flags.
  const sdk::LossScalerClient* scaler = nullptr;
  StepScalars* scalars = nullptr;
  // clip_grad_norm_'s max_norm in fp32, as CLIP_COEFFICIENT takes it; <= 0
  // is no clipping.
  float max_grad_norm = 0;
  int64_t micro_batches = 1;  // per optimizer step
  std::string precision_name;
  // Data parallel, in place on an F32 [1] device scalar over every rank:
  // the max of found_inf when ranks check different gradient elements
  // (ZeRO-1), and the sum of the squared norm when each rank adds its
  // share's (StepGradients::norm). Unset: nothing to reduce.
  std::function<absl::Status(const MNT_Tensor&)> max_over_ranks;
  std::function<absl::Status(const MNT_Tensor&)> sum_over_ranks;
};

// The optimizer's gradients as a step's loss scaling sees them.
struct StepGradients {
  // Unscaled in place and checked for inf/NaN.
  std::vector<MNT_Tensor> unscale;
  // Whose squared norm this rank adds to the global one (the same elements
  // as `unscale`, or a share of them; sum_over_ranks adds the ranks').
  std::vector<MNT_Tensor> norm;
};

// What the optimizer is handed after unscaling and clipping.
struct OptimizerGate {
  // False when the host decided to skip this step (overflow).
  bool run_optimizer = true;
  // F32 [1] when the optimizer kernels skip on it themselves (device path);
  // an empty F32 [0] when the host already decided.
  MNT_Tensor found_inf{};
  // F32 [1]: the gradient multiplier (clip_grad_norm_'s factor, or 1).
  MNT_Tensor multiplier{};
};

// The two steps both implementations share, on the device scalars of
// `c`: found_inf := whether any of `grads` holds inf/NaN (maxed over ranks
// when c.max_over_ranks), with `grads` multiplied by inv_scale in place;
// and norm_sq := the squared norm of `grads` (summed over ranks when
// c.sum_over_ranks; 0 for none).
absl::Status UnscaleAndFindInf(const LossScalingContext& c, const std::vector<MNT_Tensor>& grads);
absl::Status GlobalNormSquared(const LossScalingContext& c, const std::vector<MNT_Tensor>& grads);

class LossScaling {
 public:
  virtual ~LossScaling() = default;

  // Whether the scale, found_inf and the clip factor live on the device.
  virtual bool on_device() const = 0;

  // The scale this step's backward multiplies the loss by (1 when the run
  // does not scale), on the host. On the device path this is a read (a
  // sync) unless cached: the step asks only when a model takes the
  // multiplier as a host float or a report wants the scale.
  virtual absl::StatusOr<float> StepScale() = 0;

  // Device path only: an F32 [1] device tensor holding this step's loss
  // multiplier, scale * (1 / micro_batches) (the same fp32 product the host
  // path forms), for a model that takes it on the device (ABI 1.6).
  virtual absl::StatusOr<MNT_Tensor> DeviceLossMultiplier() {
    return absl::FailedPreconditionError("the loss scale is not on the device");
  }

  // Where micro-batch `micro`'s forward writes its mean loss (F32 [1]).
  virtual MNT_Tensor LossOutput(int64_t micro) const = 0;
  // That loss on the host, for the step's mean. The host path reads it now
  // (and stops the run on a non-finite loss when nothing scales); the device
  // path reads losses only for reported steps and gives 0.
  virtual absl::StatusOr<double> MicroBatchLoss(int64_t micro) = 0;

  // After the last backward of a step: unscale `grads` (the optimizer's)
  // in place, look for inf/NaN, update the scale and compute the clip
  // multiplier. Fills what it knows on the host of m's skipped and grad_norm.
  virtual absl::StatusOr<OptimizerGate> UnscaleUpdateAndClip(
      float scale, const StepGradients& grads, StepMetrics* m) = 0;

  // Completes a finished step's metrics (loss, skipped, grad norm, skipped
  // steps) where they are still missing, and says whether a sink gets them.
  // `wanted`: a sink asked for this step (reading device values is a sync).
  virtual absl::StatusOr<bool> CompleteStepMetrics(bool wanted,
                                                   StepMetrics* m) = 0;

  // The precision plugin's scaler (and the optimizer's applied-step count)
  // catch up with `steps_taken` steps: before a checkpoint and at the end of
  // a training call.
  virtual absl::Status SyncToPlugin(int64_t steps_taken) = 0;
  // The plugin's scaler state was restored (checkpoint): carry it to where
  // the scaling runs.
  virtual absl::Status SyncFromPlugin() = 0;
};

// A step's loss multiplier: scale * (1/micro-batches), as one fp32 product
// on either side. `on_device`: the scale is on the device and the model
// takes it there (ABI 1.6), so nothing is read back unless the step is
// `report`ed (then `scale` is the host copy; else 1).
struct LossMultiplier {
  float scale = 1.0f;
  float value = 1.0f;
  std::optional<MNT_Tensor> device;
};
absl::StatusOr<LossMultiplier> StepLossMultiplier(LossScaling& scaling, bool on_device,
                                                  bool report, int64_t micro_batches);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LOSS_SCALING_H_

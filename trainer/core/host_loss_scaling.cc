#include "trainer/core/host_loss_scaling.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "plugins/backends/common/step_math.h"  // ClipCoefficient
#include "plugins/sdk/loss_scale_math.h"
#include "plugins/sdk/tensor.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

absl::StatusOr<float> HostLossScaling::StepScale() {
  MNT_LossScalerState st{};
  if (auto s = sdk::ToAbsl(c_.scaler->GetState(&st)); !s.ok()) return s;
  return active_ ? st.scale : 1.0f;
}

MNT_Tensor HostLossScaling::LossOutput(int64_t) const {
  return F32Scalar(c_.scalars->loss);
}

absl::StatusOr<double> HostLossScaling::MicroBatchLoss(int64_t) {
  auto loss = ReadScalar<float>(*c_.client, c_.scalars->loss.data());
  if (!loss.ok()) return loss.status();
  if (!std::isfinite(*loss) && !active_) {
    return absl::InternalError(absl::StrFormat(
        "loss is %f in %s; stopping (lower --lr, or use fp16 with "
        "loss scaling to skip such steps)",
        *loss, c_.precision_name));
  }
  return *loss;
}

absl::StatusOr<OptimizerGate> HostLossScaling::UnscaleUpdateAndClip(
    float scale, const StepGradients& grads, StepMetrics* m) {
  bool skip = false;
  if (active_) {
    auto s = UnscaleAndUpdate(scale, grads.unscale);
    if (!s.ok()) return s.status();
    skip = *s;
  }
  m->skipped = skip;
  if (!skip) {
    if (auto s = Clip(grads.norm, m); !s.ok()) return s;
  }
  OptimizerGate gate;
  gate.run_optimizer = !skip;
  gate.found_inf = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {0});
  gate.multiplier = F32Scalar(c_.scalars->multiplier);
  return gate;
}

absl::StatusOr<bool> HostLossScaling::UnscaleAndUpdate(
    float scale, const std::vector<MNT_Tensor>& grads) {
  const sdk::BackendClient& client = *c_.client;
  StepScalars& sc = *c_.scalars;
  // 1/scale in fp64 then fp32, as GradScaler does.
  if (auto s = WriteScalar<float>(client, sc.inv_scale.data(), InvScale(scale)); !s.ok()) return s;
  if (auto s = UnscaleAndFindInf(c_, grads); !s.ok()) return s;
  auto found = ReadScalar<float>(client, sc.found_inf.data());
  if (!found.ok()) return found.status();
  sdk::LossScalerUpdate update;
  if (auto s = sdk::ToAbsl(c_.scaler->Update(*found != 0.0f, &update)); !s.ok()) return s;
  return update.skip();
}

absl::Status HostLossScaling::Clip(const std::vector<MNT_Tensor>& grads,
                                   StepMetrics* m) {
  StepScalars& sc = *c_.scalars;
  if (auto s = GlobalNormSquared(c_, grads); !s.ok()) return s;
  auto norm_sq = ReadScalar<float>(*c_.client, sc.norm_sq.data());
  if (!norm_sq.ok()) return norm_sq.status();
  m->grad_norm = std::sqrt(static_cast<double>(*norm_sq));
  // torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), with the
  // formula the device path's CLIP_COEFFICIENT uses.
  return WriteScalar<float>(*c_.client, sc.multiplier.data(),
                  ClipCoefficient(*norm_sq, c_.max_grad_norm, false));
}

absl::StatusOr<bool> HostLossScaling::CompleteStepMetrics(bool, StepMetrics* m) {
  MNT_LossScalerState st{};
  if (auto s = sdk::ToAbsl(c_.scaler->GetState(&st)); !s.ok()) return s;
  m->skipped_steps = st.skipped_steps;
  m->next_loss_scale = active_ ? st.scale : 1.0;  // Update has run
  return true;  // every step's metrics are on the host already
}

}  // namespace mnt::trainer

#include "trainer/core/loss_scaling.h"

#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {

absl::Status UnscaleAndFindInf(const LossScalingContext& c, const std::vector<MNT_Tensor>& grads) {
  const StepScalars& sc = *c.scalars;
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  if (auto s = sdk::ToAbsl(c.client->Run(MNT_OP_FILL, {}, {F32Scalar(sc.found_inf)}, &zero));
      !s.ok())
    return s;
  // Unscale in place and look for inf/NaN in one pass (torch's fused check).
  std::vector<MNT_Tensor> in{F32Scalar(sc.inv_scale)}, out{F32Scalar(sc.found_inf)};
  in.insert(in.end(), grads.begin(), grads.end());
  out.insert(out.end(), grads.begin(), grads.end());
  if (auto s = sdk::ToAbsl(c.client->Run(MNT_OP_NONFINITE_CHECK_UNSCALE, in, out)); !s.ok())
    return s;
  return c.max_over_ranks ? c.max_over_ranks(F32Scalar(sc.found_inf)) : absl::OkStatus();
}

absl::Status GlobalNormSquared(const LossScalingContext& c, const std::vector<MNT_Tensor>& grads) {
  const MNT_Tensor norm_sq = F32Scalar(c.scalars->norm_sq);
  // A rank whose share holds only padding adds 0 (the op takes at least one
  // tensor).
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  if (auto s = sdk::ToAbsl(grads.empty()
                               ? c.client->Run(MNT_OP_FILL, {}, {norm_sq}, &zero)
                               : c.client->Run(MNT_OP_GLOBAL_NORM_SQUARED, grads, {norm_sq}));
      !s.ok())
    return s;
  return c.sum_over_ranks ? c.sum_over_ranks(norm_sq) : absl::OkStatus();
}

absl::StatusOr<LossMultiplier> StepLossMultiplier(LossScaling& scaling, bool on_device,
                                                  bool report, int64_t micro_batches) {
  LossMultiplier m;
  if (on_device) {
    auto d = scaling.DeviceLossMultiplier();
    if (!d.ok()) return d.status();
    m.device = *d;
  }
  if (!m.device.has_value() || report) {
    auto s = scaling.StepScale();
    if (!s.ok()) return s.status();
    m.scale = *s;
  }
  m.value = m.scale * (1.0f / static_cast<float>(micro_batches));
  return m;
}

}  // namespace mnt::trainer

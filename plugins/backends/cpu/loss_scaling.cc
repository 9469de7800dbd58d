// AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.4): the scalar halves of an
// fp16 step that keep the loss scale and the clipping factor on the device.
// Formulas in plugins/sdk/loss_scale_math.h (the loss scale, shared with
// the precision plugins and CUDA) and plugins/backends/common/step_math.h.
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cpu/backend.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::AmpUpdateScale(const backend::AmpUpdateScaleCall& a) {
  float* scale = a.scale.f32();
  int32_t no_hysteresis = 0;  // hysteresis 1 never reads or moves it
  int32_t* hysteresis_tracker =
      a.hysteresis_tracker.present() ? a.hysteresis_tracker.i32() : &no_hysteresis;
  mnt::UpdateLossScale(*a.found_inf.f32() != 0.0f, static_cast<double>(a.growth_factor),
                       static_cast<double>(a.backoff_factor), a.growth_interval,
                       a.hysteresis, a.min_scale, a.max_scale, scale,
                       a.growth_tracker.i32(), hysteresis_tracker);
  *a.inv_scale.f32() = InvScale(*scale);
  return Status::Ok();
}

Status CpuBackend::ClipCoefficient(const backend::ClipCoefficientCall& c) {
  const bool skip = c.found_inf.present() && *c.found_inf.f32() != 0.0f;
  *c.multiplier.f32() = mnt::ClipCoefficient(*c.norm_squared.f32(), c.max_norm, skip);
  return Status::Ok();
}

}  // namespace mnt::cpu

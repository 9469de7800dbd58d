// AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.4): the scalar halves of an
// fp16 step that keep the loss scale and the clipping factor on the device.
// Formulas in plugins/backends/common/step_math.h, shared with CUDA.
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cpu/backend.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::AmpUpdateScale(const backend::AmpUpdateScaleCall& a) {
  float* scale = a.scale.f32();
  mnt::AmpUpdateScale(*a.found_inf.f32() != 0.0f, a.growth_factor, a.backoff_factor,
                      a.growth_interval, scale, a.growth_tracker.i32());
  *a.inv_scale.f32() = InvScale(*scale);
  return Status::Ok();
}

Status CpuBackend::ClipCoefficient(const backend::ClipCoefficientCall& c) {
  const bool skip = c.found_inf.present() && *c.found_inf.f32() != 0.0f;
  *c.multiplier.f32() = mnt::ClipCoefficient(*c.norm_squared.f32(), c.max_norm, skip);
  return Status::Ok();
}

}  // namespace mnt::cpu

// AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.4): the scalar halves of an
// fp16 step that keep the loss scale and the clipping factor on the device.
// Formulas in plugins/backends/common/step_math.h, shared with CUDA.
#include <cmath>
#include <cstdint>

#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

Status ExpectI32Scalar(const OpCall& call, const Operand& t) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_I32));
  return call.ExpectElements(t, 1, "i32 with 1 element");
}

Status CheckAmpUpdateScaleParams(const OpCall& call,
                                 const MNT_AmpUpdateScaleParams& p) {
  if (!(p.growth_factor > 1.0f) || !std::isfinite(p.growth_factor)) {
    return call.Invalid(sdk::Format("growth_factor %g must be finite and > 1",
                                    static_cast<double>(p.growth_factor)));
  }
  if (!(p.backoff_factor > 0.0f && p.backoff_factor < 1.0f)) {
    return call.Invalid(sdk::Format("backoff_factor %g must be in (0, 1)",
                                    static_cast<double>(p.backoff_factor)));
  }
  if (p.growth_interval < 1) {
    return call.Invalid(
        sdk::Format("growth_interval %d must be >= 1", p.growth_interval));
  }
  return Status::Ok();
}

}  // namespace

Status RunAmpUpdateScale(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 3, 3));
  const MNT_AmpUpdateScaleParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AmpUpdateScaleParams",
                                  MNT_AmpUpdateScaleParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(CheckAmpUpdateScaleParams(call, *p));
  Operand found_inf, scale, tracker, inv_scale;
  MNT_RETURN_IF_ERROR(call.Input(0, "found_inf", &found_inf));
  MNT_RETURN_IF_ERROR(call.Output(0, "scale", &scale));
  MNT_RETURN_IF_ERROR(call.Output(1, "growth_tracker", &tracker));
  MNT_RETURN_IF_ERROR(call.Output(2, "inv_scale", &inv_scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(scale));
  MNT_RETURN_IF_ERROR(ExpectI32Scalar(call, tracker));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(inv_scale));
  float* s = F32Data(*scale);
  int32_t* t = static_cast<int32_t*>(tracker->data);
  AmpUpdateScale(*F32Data(*found_inf) != 0.0f, p->growth_factor,
                 p->backoff_factor, p->growth_interval, s, t);
  *F32Data(*inv_scale) = InvScale(*s);
  return Status::Ok();
}

Status RunClipCoefficient(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 1, 1));
  const MNT_ClipCoefficientParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_ClipCoefficientParams",
                                  MNT_ClipCoefficientParams_STRUCT_SIZE, false, &p));
  if (std::isnan(p->max_norm)) return call.Invalid("max_norm is NaN");
  Operand norm_squared, multiplier;
  MNT_RETURN_IF_ERROR(call.Input(0, "norm_squared", &norm_squared));
  MNT_RETURN_IF_ERROR(call.Output(0, "multiplier", &multiplier));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(norm_squared));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(multiplier));
  const Operand found_inf = call.OptionalInput(1, "found_inf");
  bool skip = false;
  if (found_inf.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
    skip = *F32Data(*found_inf) != 0.0f;
  }
  *F32Data(*multiplier) = ClipCoefficient(*F32Data(*norm_squared), p->max_norm, skip);
  return Status::Ok();
}

}  // namespace mnt::cpu

#include "plugins/backends/common/calls/loss_scaling.h"

#include <cmath>

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

Status CheckAmpUpdateScale(const OpCall& call, AmpUpdateScaleCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 3, 4));
  const MNT_AmpUpdateScaleParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AmpUpdateScaleParams",
                                  MNT_AmpUpdateScaleParams_STRUCT_SIZE_1_4, false, &p));
  if (!(p->growth_factor > 1.0f) || !std::isfinite(p->growth_factor)) {
    return call.Invalid(sdk::Format("growth_factor %g must be finite and > 1",
                                    static_cast<double>(p->growth_factor)));
  }
  if (!(p->backoff_factor > 0.0f && p->backoff_factor < 1.0f)) {
    return call.Invalid(sdk::Format("backoff_factor %g must be in (0, 1)",
                                    static_cast<double>(p->backoff_factor)));
  }
  if (p->growth_interval < 1) {
    return call.Invalid(sdk::Format("growth_interval %d must be >= 1", p->growth_interval));
  }
  a->growth_factor = p->growth_factor;
  a->backoff_factor = p->backoff_factor;
  a->growth_interval = p->growth_interval;
  if (MNT_HAS_FIELD(p, MNT_AmpUpdateScaleParams, max_scale)) {
    if (p->hysteresis < 0) {
      return call.Invalid(sdk::Format("hysteresis %d must be >= 0 (0 and 1: back off "
                                      "on every overflow)", p->hysteresis));
    }
    if (!(p->min_scale >= 0.0f) || !std::isfinite(p->min_scale)) {
      return call.Invalid(sdk::Format("min_scale %g must be finite and >= 0",
                                      static_cast<double>(p->min_scale)));
    }
    if (!(p->max_scale == 0.0f ||
          (p->max_scale >= p->min_scale && std::isfinite(p->max_scale)))) {
      return call.Invalid(sdk::Format(
          "max_scale %g must be 0 (no ceiling) or finite and >= min_scale %g",
          static_cast<double>(p->max_scale), static_cast<double>(p->min_scale)));
    }
    a->hysteresis = p->hysteresis > 1 ? p->hysteresis : 1;
    a->min_scale = p->min_scale;
    a->max_scale = p->max_scale;
  }
  MNT_RETURN_IF_ERROR(call.Input(0, "found_inf", &a->found_inf));
  MNT_RETURN_IF_ERROR(call.Output(0, "scale", &a->scale));
  MNT_RETURN_IF_ERROR(call.Output(1, "growth_tracker", &a->growth_tracker));
  MNT_RETURN_IF_ERROR(call.Output(2, "inv_scale", &a->inv_scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(a->found_inf));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(a->scale));
  MNT_RETURN_IF_ERROR(call.ExpectI32Scalar(a->growth_tracker));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(a->inv_scale));
  a->hysteresis_tracker = call.OptionalOutput(3, "hysteresis_tracker");
  if (a->hysteresis_tracker.present()) {
    return call.ExpectI32Scalar(a->hysteresis_tracker);
  }
  if (a->hysteresis > 1) {
    return call.Invalid(sdk::Format(
        "hysteresis %d needs out[3] hysteresis_tracker I32[1]", a->hysteresis));
  }
  return Status::Ok();
}

Status CheckClipCoefficient(const OpCall& call, ClipCoefficientCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 1, 1));
  const MNT_ClipCoefficientParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_ClipCoefficientParams",
                                  MNT_ClipCoefficientParams_STRUCT_SIZE, false, &p));
  if (std::isnan(p->max_norm)) return call.Invalid("max_norm is NaN");
  c->max_norm = p->max_norm;
  MNT_RETURN_IF_ERROR(call.Input(0, "norm_squared", &c->norm_squared));
  MNT_RETURN_IF_ERROR(call.Output(0, "multiplier", &c->multiplier));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->norm_squared));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->multiplier));
  c->found_inf = call.OptionalInput(1, "found_inf");
  if (c->found_inf.present()) return call.ExpectF32Scalar(c->found_inf);
  return Status::Ok();
}

}  // namespace mnt::backend

// The contracts of AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.4;
// semantics: plugins/abi/mnt_backend.h), checked once for every backend.
// Every operand is a scalar in device memory; the loss-scale formula is
// plugins/sdk/loss_scale_math.h's, the clip factor step_math.h's.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LOSS_SCALING_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LOSS_SCALING_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// found_inf F32[1] in; scale F32[1], growth_tracker I32[1] updated in place;
// inv_scale F32[1] out; since 1.5 an optional hysteresis_tracker I32[1]
// updated in place (required when hysteresis > 1). Factors, interval and
// the 1.5 recipe parameters checked (a 1.4 caller's params: hysteresis 1,
// no floor, no ceiling).
struct AmpUpdateScaleCall : TypedCall {
  Operand found_inf, scale, growth_tracker, inv_scale;
  Operand hysteresis_tracker;  // may be absent (then hysteresis is 1)
  float growth_factor = 2.0f, backoff_factor = 0.5f;
  int32_t growth_interval = 1;
  int32_t hysteresis = 1;
  float min_scale = 0.0f, max_scale = 0.0f;
};
sdk::Status CheckAmpUpdateScale(const OpCall& call, AmpUpdateScaleCall* out);

// multiplier F32[1] from norm_squared F32[1] (and optional found_inf F32[1]).
struct ClipCoefficientCall : TypedCall {
  Operand norm_squared, found_inf, multiplier;  // found_inf may be absent
  float max_norm = 0.0f;  // not NaN
};
sdk::Status CheckClipCoefficient(const OpCall& call, ClipCoefficientCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LOSS_SCALING_H_

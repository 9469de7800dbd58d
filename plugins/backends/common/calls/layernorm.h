// The contracts of LAYERNORM_FORWARD/BACKWARD and (1.6) RESIDUAL_LAYERNORM_
// FORWARD/BACKWARD (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. x is viewed as
// [rows, c], normalised over its last dimension c (> 0).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LAYERNORM_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LAYERNORM_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// y = (x - mean) * rstd * weight + bias; mean and rstd F32 [rows] saved.
struct LayerNormForwardCall : TypedCall {
  Operand x, weight, bias, y, mean, rstd;
  int64_t rows = 0, c = 0;
  float epsilon = 0.0f;
};
sdk::Status CheckLayerNormForward(const OpCall& call, LayerNormForwardCall* out);

// dx (overwritten), dweight and dbias (added to when accumulate).
struct LayerNormBackwardCall : TypedCall {
  Operand dy, x, weight, mean, rstd, dx, dweight, dbias;
  int64_t rows = 0, c = 0;
  bool accumulate = false;
};
sdk::Status CheckLayerNormBackward(const OpCall& call, LayerNormBackwardCall* out);

// Since 1.6. sum = x + r (rounded to sum's dtype), then the layer norm of
// the rounded sum as LayerNormForwardCall: y, mean, rstd.
struct ResidualLayerNormForwardCall : TypedCall {
  Operand x, r, weight, bias, sum, y, mean, rstd;
  int64_t rows = 0, c = 0;
  float epsilon = 0.0f;
};
sdk::Status CheckResidualLayerNormForward(const OpCall& call,
                                          ResidualLayerNormForwardCall* out);

// Since 1.6. dx = (dsum when given) + the layer norm's input gradient,
// rounded once (dx may alias dsum); dweight and dbias as LayerNormBackwardCall.
// in[1] is the stored sum (x here).
struct ResidualLayerNormBackwardCall : LayerNormBackwardCall {
  Operand dsum;  // in[5], optional
};
sdk::Status CheckResidualLayerNormBackward(const OpCall& call,
                                           ResidualLayerNormBackwardCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LAYERNORM_H_

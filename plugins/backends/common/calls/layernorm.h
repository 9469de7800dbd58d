// The contracts of LAYERNORM_FORWARD/BACKWARD (semantics:
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

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_LAYERNORM_H_

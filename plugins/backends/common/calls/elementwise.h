// The contracts of FILL, CAST, ADD and ACTIVATION_FORWARD/BACKWARD
// (semantics: plugins/abi/mnt_backend.h), checked once for every backend.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_ELEMENTWISE_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_ELEMENTWISE_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// out[0] = value; I32 outputs take only values an int32 holds exactly.
struct FillCall : TypedCall {
  Operand out;
  int64_t n = 0;
  double value = 0.0;
};
sdk::Status CheckFill(const OpCall& call, FillCall* out);

// y = x converted, both float dtypes with n elements.
struct CastCall : TypedCall {
  Operand x, y;
  int64_t n = 0;
};
sdk::Status CheckCast(const OpCall& call, CastCall* out);

// out = alpha * a (+ beta * b); b may be absent.
struct AddCall : TypedCall {
  Operand a, b, out;
  int64_t n = 0;
  float alpha = 1.0f, beta = 0.0f;
};
sdk::Status CheckAdd(const OpCall& call, AddCall* out);

// y = act(x).
struct ActivationForwardCall : TypedCall {
  MNT_Activation activation = MNT_ACTIVATION_INVALID;  // a known one
  Operand x, y;
  int64_t n = 0;
};
sdk::Status CheckActivationForward(const OpCall& call, ActivationForwardCall* out);

// dx = act'(x) * dy.
struct ActivationBackwardCall : TypedCall {
  MNT_Activation activation = MNT_ACTIVATION_INVALID;
  Operand x, dy, dx;
  int64_t n = 0;
};
sdk::Status CheckActivationBackward(const OpCall& call, ActivationBackwardCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_ELEMENTWISE_H_

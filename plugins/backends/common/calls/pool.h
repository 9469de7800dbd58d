// The contracts of POOL2D_FORWARD/BACKWARD (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. The geometry
// is the one the per-element pooling math of layer_math.h takes.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_POOL_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_POOL_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// x [N, C, H, W] pooled plane by plane (planes = N * C) into y [N, C, P, Q].
struct Pool2dForwardCall : TypedCall {
  MNT_PoolKind kind = MNT_POOL_INVALID;  // a known one
  PoolGeometry geometry{};
  int64_t planes = 0;
  Operand x, y;
};
sdk::Status CheckPool2dForward(const OpCall& call, Pool2dForwardCall* out);

// dx [N, C, H, W] (overwritten) from dy [N, C, P, Q] and the forward's x.
struct Pool2dBackwardCall : TypedCall {
  MNT_PoolKind kind = MNT_POOL_INVALID;
  PoolGeometry geometry{};
  int64_t planes = 0;
  Operand dy, x, dx;
};
sdk::Status CheckPool2dBackward(const OpCall& call, Pool2dBackwardCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_POOL_H_

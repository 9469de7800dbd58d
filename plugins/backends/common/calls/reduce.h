// The contracts of BIAS_GRAD, REDUCE, GLOBAL_NORM_SQUARED and
// NONFINITE_CHECK_UNSCALE (semantics: plugins/abi/mnt_backend.h), checked
// once for every backend.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_REDUCE_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_REDUCE_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// db[n] = (accumulate ? db : 0) + column sums of dy viewed as [rows, n].
struct BiasGradCall : TypedCall {
  Operand dy, db;
  int64_t rows = 0, n = 0;
  bool accumulate = false;
};
sdk::Status CheckBiasGrad(const OpCall& call, BiasGradCall* out);

// out F32[1] = SUM / MEAN / MAX of x's n elements (n > 0 unless SUM).
struct ReduceCall : TypedCall {
  MNT_ReduceKind kind = MNT_REDUCE_INVALID;  // a known one
  Operand x, out;
  int64_t n = 0;
};
sdk::Status CheckReduce(const OpCall& call, ReduceCall* out);

// out F32[1] = sum of squares of every element of every input.
struct GlobalNormSquaredCall : TypedCall {
  std::vector<Operand> inputs;
  Operand out;
};
sdk::Status CheckGlobalNormSquared(const OpCall& call, GlobalNormSquaredCall* out);

// found_inf (F32[1]) raised on any inf/NaN; each gradient's `out` =
// grad * inv_scale (F32[1] on the device).
struct NonfiniteCheckUnscaleCall : TypedCall {
  struct Gradient {
    Operand grad, out;  // in[i], out[i], i >= 1
    int64_t n = 0;
  };
  Operand inv_scale, found_inf;
  std::vector<Gradient> gradients;
};
sdk::Status CheckNonfiniteCheckUnscale(const OpCall& call,
                                       NonfiniteCheckUnscaleCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_REDUCE_H_

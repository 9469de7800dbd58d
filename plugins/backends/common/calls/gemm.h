// The contract of GEMM (semantics: plugins/abi/mnt_backend.h), checked once
// for every backend.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_GEMM_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_GEMM_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// A checked GEMM: C[M,N] = alpha * op(A) op(B) + beta * C (+ bias[N]).
struct GemmCall : TypedCall {
  const MNT_GemmParams* params = nullptr;  // alpha, beta, compute (a known mode)
  Operand a, b, bias, c;  // bias may be absent
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
};

sdk::Status CheckGemm(const OpCall& call, GemmCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_GEMM_H_

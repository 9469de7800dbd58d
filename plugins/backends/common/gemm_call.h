// MNT_OP_GEMM's operand and shape checks, shared by every backend so the
// contract (and its one-line errors) lives in one place.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_GEMM_CALL_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_GEMM_CALL_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// A checked GEMM: C[M,N] = alpha * op(A) op(B) + beta * C (+ bias[N]).
struct GemmCall {
  const MNT_GemmParams* params = nullptr;
  Operand a, b, bias, c;  // bias may be absent
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
};

sdk::Status CheckGemm(const OpCall& call, GemmCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_GEMM_CALL_H_

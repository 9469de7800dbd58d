// The contracts of GEMM and its fused-epilogue variants GEMM_BIAS_GELU,
// GEMM_DGELU and GEMM_BIAS_GRAD (semantics: plugins/abi/mnt_backend.h),
// checked once for every backend.
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

// What every fused-epilogue GEMM shares: C[M,N] = alpha * op(A) op(B)
// (+ beta * C where the op allows it) and the params that say how.
struct GemmProduct {
  Operand a, b, c;  // c: out[0] (y, dpre or C)
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  MNT_ComputeMode compute = MNT_COMPUTE_F32;
  int64_t m = 0, n = 0, k = 0;
};

// The plain GEMM of a fused op's product, the unfused path's first step:
// alpha * op(A) op(B) (+ bias when present) (+ beta * out) into `out`.
// The returned call points at *params, which must outlive it.
GemmCall PlainGemmOf(const OpCall* op, const GemmProduct& g, const Operand& bias,
                     float beta, const Operand& out, MNT_GemmParams* params);

// y = gelu_tanh(pre), pre = alpha * op(A) op(B) + bias.
struct GemmBiasGeluCall : TypedCall, GemmProduct {
  Operand bias;  // [N]
  Operand pre;   // out[1] [M,N]
};
sdk::Status CheckGemmBiasGelu(const OpCall& call, GemmBiasGeluCall* out);

// dpre (= c) = gelu_tanh'(pre) * alpha * op(A) op(B); optional dbias [N].
struct GemmDgeluCall : TypedCall, GemmProduct {
  Operand pre;    // in[2] [M,N]
  Operand dbias;  // optional out[1] [N]
  bool accumulate_bias_grad = false;
};
sdk::Status CheckGemmDgelu(const OpCall& call, GemmDgeluCall* out);

// C = alpha * op(A) op(B) + beta * C; dbias [M] = row sums of op(A).
struct GemmBiasGradCall : TypedCall, GemmProduct {
  Operand dbias;  // out[1] [M]
  bool accumulate_bias_grad = false;
};
sdk::Status CheckGemmBiasGrad(const OpCall& call, GemmBiasGradCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_GEMM_H_

// The contracts of the FP8 ops SCALED_CAST, SCALED_GEMM and (1.10)
// FP8_SCALE_UPDATE (semantics: plugins/abi/mnt_backend.h), checked once for
// every backend.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_FP8_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_FP8_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// y = convert(x * scale); quantize (x float, y FP8) or dequantize (x FP8,
// y float); amax optional.
struct ScaledCastCall : TypedCall {
  Operand x, scale, y, amax;  // amax may be absent
  bool quantize = false;      // y is FP8
  int64_t n = 0;              // elements
};
sdk::Status CheckScaledCast(const OpCall& call, ScaledCastCall* out);

// D[M,N] = alpha * scale_inv_a * scale_inv_b * op(A) op(B) + beta * D
// (+ bias); A and B FP8; amax of D optional.
struct ScaledGemmCall : TypedCall {
  const MNT_ScaledGemmParams* params = nullptr;
  Operand a, b, scale_inv_a, scale_inv_b, bias, d, amax;  // bias, amax may be absent
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
};
sdk::Status CheckScaledGemm(const OpCall& call, ScaledGemmCall* out);

// Delayed scaling for N tensors (ABI 1.10): amax [N] in; history [H, N],
// scale [N] updated in place, scale_inv [N] written. All F32, four separate
// buffers. Per tensor: common/fp8_scale_math.h's Fp8ScaleUpdateOne.
struct Fp8ScaleUpdateCall : TypedCall {
  const MNT_Fp8ScaleUpdateParams* params = nullptr;
  Operand amax, history, scale, scale_inv;
  int64_t n = 0;               // tensors (N)
  int64_t rows = 0;            // history rows (H >= 1)
  int64_t history_length = 0;  // rows reduced, 1..H
  bool most_recent = false;    // MNT_AMAX_ALGO_MOST_RECENT (else MAX)
  float fp8_max = 0.0f;        // finite, > 0
  int32_t margin = 0;          // >= 0
};
sdk::Status CheckFp8ScaleUpdate(const OpCall& call, Fp8ScaleUpdateCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_FP8_H_

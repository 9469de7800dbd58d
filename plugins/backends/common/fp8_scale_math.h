// One tensor's FP8 delayed-scaling update (ABI 1.10, MNT_OP_FP8_SCALE_UPDATE;
// semantics in plugins/abi/mnt_backend.h), shared by the CPU backend and the
// CUDA kernel (one thread per tensor). Transformer Engine's rule:
//   1. a finite amax rolls the tensor's history column down one row (row
//      H-1 falls off) and becomes row 0; a non-finite one leaves it as it is;
//   2. r = max over rows [0, history_length) (MAX) or row 0 (MOST_RECENT);
//   3. when r > 0, s = (fp8_max / r) * 2^-margin, and s is finite and > 0,
//      scale = s; otherwise the scale is kept;
//   4. scale_inv = 1 / scale.
// Every step is specified to the bit, so host and device agree exactly:
// fp8_max / r and 1 / scale are fp32 divisions rounded to nearest even
// (rounded_arith.h's DivF32: __fdiv_rn on the device, IEEE under --use_fast_math);
// the margin is the exact product of that quotient with 2^-margin, rounded
// once to fp32 (formed in double, where it is exact, so a margin past
// fp32's exponent range, where 2^-margin is no fp32 number, still rounds
// once). So "s finite" is of the fp32 quotient: fp8_max / r overflowing
// fp32 keeps the scale whatever the margin. The max of step 2 lets a NaN
// win (a caller's NaN in the history keeps the scale; the op itself never
// puts one there).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_FP8_SCALE_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_FP8_SCALE_MATH_H_

#include <cstdint>
#include <cstring>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/rounded_arith.h"

namespace mnt {

// max of a and b where a NaN (in either) wins.
MNT_HOST_DEVICE inline float Fp8HistoryMax(float a, float b) {
  if (a != a) return a;
  return b <= a ? a : b;  // b NaN: the comparison is false and b wins
}

// Margins at or past this give a product below 2^-150 (q < 2^128), which
// rounds to 0 in fp32: the scale is kept.
constexpr int32_t kFp8MaxUsefulMargin = 300;

// q * 2^-margin (q fp32, margin >= 0) rounded once to fp32.
MNT_HOST_DEVICE inline float Fp8ApplyMargin(float q, int32_t margin) {
  if (margin == 0) return q;
  if (margin >= kFp8MaxUsefulMargin) return IsFiniteF32(q) ? 0.0f * q : q;
  // 2^-margin as a normal double (margin < 1023), exact; the product of a
  // float with it is exact in double (no underflow: >= 2^-449).
  const uint64_t bits = static_cast<uint64_t>(1023 - margin) << 52;
  double p;
  std::memcpy(&p, &bits, sizeof(p));
#ifdef __CUDA_ARCH__
  return __double2float_rn(__dmul_rn(static_cast<double>(q), p));
#else
  return static_cast<float>(static_cast<double>(q) * p);
#endif
}

// Step 3: the new scale from the reduced amax r, or `old_scale` kept.
MNT_HOST_DEVICE inline float Fp8ScaleFromAmax(float r, float fp8_max, int32_t margin,
                                              float old_scale) {
  if (!(r > 0.0f)) return old_scale;  // zero, negative or NaN
  const float s = Fp8ApplyMargin(DivF32(fp8_max, r), margin);
  return IsFiniteF32(s) && s > 0.0f ? s : old_scale;
}

// Steps 1-4 for tensor n: `history` points at its row-0 element, rows
// `stride` floats apart (stride = N); `rows` = H >= history_length >= 1.
MNT_HOST_DEVICE inline void Fp8ScaleUpdateOne(float amax, float* history, int64_t rows,
                                              int64_t stride, int64_t history_length,
                                              bool most_recent, float fp8_max,
                                              int32_t margin, float* scale,
                                              float* scale_inv) {
  if (IsFiniteF32(amax)) {
    for (int64_t h = rows - 1; h > 0; --h) history[h * stride] = history[(h - 1) * stride];
    history[0] = amax;
  }
  float r = history[0];
  if (!most_recent) {
    for (int64_t h = 1; h < history_length; ++h) r = Fp8HistoryMax(r, history[h * stride]);
  }
  const float s = Fp8ScaleFromAmax(r, fp8_max, margin, *scale);
  *scale = s;
  *scale_inv = DivF32(1.0f, s);
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_FP8_SCALE_MATH_H_

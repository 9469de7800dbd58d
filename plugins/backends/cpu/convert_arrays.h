// Array conversions between fp32 and the 16-bit storage formats, and
// rounding to a GEMM operand format, on one thread. Same bits as the scalar
// functions in common/float_convert.h (the numerical reference; the tests
// compare every binary16 pattern and a dense sweep of fp32 patterns), but
// fast: binary16 through the CPU's F16C instructions where it has them (both
// are IEEE round-to-nearest-even and quiet NaNs the same way), bf16 and tf32
// through branch-free integer arithmetic the compiler vectorises. The scalar
// functions branch per element and stay scalar, which made every 16-bit and
// tf32 GEMM operand cost more to convert than to multiply.
//
// Callers split large arrays across threads themselves (tensor_io.cc).
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_CONVERT_ARRAYS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_CONVERT_ARRAYS_H_

#include <cstdint>

#include "plugins/abi/mnt_common.h"

namespace mnt::cpu {

void HalfToFloatArray(const uint16_t* src, int64_t n, float* dst);
void FloatToHalfArray(const float* src, int64_t n, uint16_t* dst);
void Bf16ToFloatArray(const uint16_t* src, int64_t n, float* dst);
void FloatToBf16Array(const float* src, int64_t n, uint16_t* dst);
// x[i] = RoundToCompute(x[i], mode), in place.
void RoundArrayToCompute(float* x, int64_t n, MNT_ComputeMode mode);

// Whether every value stored as `storage` is already exactly representable
// in `mode`'s operand format, so rounding to it would change nothing (fp16
// and bf16 values under tf32; each 16-bit format under its own mode).
bool StorageIsExactIn(MNT_DType storage, MNT_ComputeMode mode);

// Whether the binary16 conversions use F16C on this CPU (for benchmarks and
// tests; the results are the same either way).
bool UsesF16c();

namespace internal {
// The portable paths, whatever the CPU has (tested against the F16C ones).
void HalfToFloatArrayPortable(const uint16_t* src, int64_t n, float* dst);
void FloatToHalfArrayPortable(const float* src, int64_t n, uint16_t* dst);
}  // namespace internal

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_CONVERT_ARRAYS_H_

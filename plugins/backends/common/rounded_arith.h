// fp32 arithmetic rounded once per operation on every backend. nvcc
// contracts a * b + c into one FMA (a single rounding) unless told not to;
// the CPU backend is compiled with -ffp-contract=off and rounds twice. Math
// whose contract is "the same bits on every backend" (the optimizer
// updates) spells each product and sum with these, so nvcc cannot fuse
// them: __fmul_rn/__fadd_rn are never contracted. //plugins/backends/cuda:
// no_fma_test compiles those kernels to PTX and fails on any fma in them.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_ROUNDED_ARITH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_ROUNDED_ARITH_H_

#include <cmath>

#include "plugins/backends/common/host_device.h"

namespace mnt {

// a * b, rounded to nearest even.
MNT_HOST_DEVICE inline float MulF32(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// a + b, rounded to nearest even.
MNT_HOST_DEVICE inline float AddF32(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// a - b, rounded to nearest even.
MNT_HOST_DEVICE inline float SubF32(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// a / b, rounded to nearest even (__fdiv_rn stays IEEE even under
// --use_fast_math, which turns a plain '/' into an approximation).
MNT_HOST_DEVICE inline float DivF32(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// sqrt(a) in fp32, correctly rounded on both sides (nvcc's sqrtf is only
// under -prec-sqrt=true, which --use_fast_math turns off).
MNT_HOST_DEVICE inline float SqrtF32(float a) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(a);
#else
  return sqrtf(a);
#endif
}

// The same in double (Adafactor's sums and norms, the 8-bit maps'
// midpoints): __dadd_rn and friends are never contracted either.
MNT_HOST_DEVICE inline double AddRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

MNT_HOST_DEVICE inline double DivRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

MNT_HOST_DEVICE inline double SqrtRn(double a) {
#ifdef __CUDA_ARCH__
  return __dsqrt_rn(a);
#else
  return sqrt(a);
#endif
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_ROUNDED_ARITH_H_

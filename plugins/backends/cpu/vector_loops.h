// The element-wise loops that dominate the CPU backend's non-GEMM time
// (GELU, the exponentials of softmax, cross-entropy and attention), each
// compiled twice: for AVX2 + FMA (x86-64-v3) and for the baseline x86-64 the
// rest of the plugin targets. The CPU decides once, at first use, so one
// binary runs everywhere and uses 8-wide vectors and FMA where it can.
// Element results match gelu_vector.h's definitions to its stated error
// bounds on either path (vector_loops_test checks both against float64);
// the two paths may differ in the last bits (FMA, the lanes of a sum), a
// given machine never differs run to run.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_VECTOR_LOOPS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_VECTOR_LOOPS_H_

#include <cstdint>

namespace mnt::cpu {

// One compiled version of every loop.
struct VectorLoops {
  const char* isa;  // "x86-64-v3" or "baseline"
  // y[i] = gelu_tanh(x[i]); y may be x.
  void (*gelu_tanh)(const float* x, float* y, int64_t n);
  // dx[i] = gelu_tanh'(x[i]) * dy[i]; dx may be dy.
  void (*gelu_tanh_backward)(const float* x, const float* dy, float* dx, int64_t n);
  // e[i] = exp(scale * x[i] - shift) (gelu_vector.h's ExpClamped); returns
  // their sum, accumulated in double. e may be x.
  double (*exp_shifted)(const float* x, float* e, int64_t n, float scale, float shift);
  // The largest x[i]; -inf when n == 0 (a NaN among them may be returned or
  // skipped: callers feed it to exp, which keeps it either way).
  float (*max)(const float* x, int64_t n);
};

// The version this CPU runs (AVX2 and FMA present, and the OS saves AVX
// state), and each version on its own for the tests (Avx2 is null where the
// CPU lacks it).
const VectorLoops& Loops();
const VectorLoops& BaselineLoops();
const VectorLoops* Avx2Loops();

inline void GeluTanhLoop(const float* x, float* y, int64_t n) { Loops().gelu_tanh(x, y, n); }
inline void GeluTanhBackwardLoop(const float* x, const float* dy, float* dx, int64_t n) {
  Loops().gelu_tanh_backward(x, dy, dx, n);
}
inline double ExpShiftedLoop(const float* x, float* e, int64_t n, float scale, float shift) {
  return Loops().exp_shifted(x, e, n, scale, shift);
}
inline float MaxLoop(const float* x, int64_t n) { return Loops().max(x, n); }

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_VECTOR_LOOPS_H_

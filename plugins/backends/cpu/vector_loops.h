// The loops that dominate the CPU backend's non-GEMM time (GELU, the
// exponentials of softmax, cross-entropy and attention, layer norm's rows,
// the column sums of bias and norm-parameter gradients, the gradient norm's
// sum of squares, AdamW's element update), each
// compiled three times: for AVX-512 (x86-64-v4, 512-bit vectors), for AVX2 +
// FMA (x86-64-v3) and for the baseline x86-64 the rest of the plugin
// targets. The CPU decides once, at first use, so one binary runs everywhere
// and uses 16- or 8-wide vectors and FMA where it can. Element results match
// gelu_vector.h's definitions to its stated error bounds on every path
// (vector_loops_test checks each against float64); the paths may differ in
// the last bits (FMA, the lanes of a sum), a given machine never differs run
// to run. AdamW's update is the same bits on all three.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_VECTOR_LOOPS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_VECTOR_LOOPS_H_

#include <cstdint>

#include "plugins/backends/common/elementwise_math.h"

namespace mnt::cpu {

// One compiled version of every loop.
struct VectorLoops {
  const char* isa;  // "x86-64-v4", "x86-64-v3" or "baseline"
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
  // acc[j] += x[j] in double (a row of a column sum: exact in any order of
  // rows, so the same bits on both versions).
  void (*add_to_sums)(const float* x, int64_t n, double* acc);
  // Layer norm of one row of c values: mean and rstd = 1 / sqrt(var + eps)
  // (biased variance) from double sums, y = (x - mean) rstd w + b.
  void (*layer_norm_row)(const float* x, int64_t c, const float* w, const float* b,
                         float epsilon, float* y, float* mean, float* rstd);
  // One row's layer-norm input gradient, xhat = (x - mean) rstd and
  // dxhat = dy w: dx = dsum + rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)),
  // the means in double; dsum may be null (0) and may alias dx.
  void (*layer_norm_backward_row)(const float* x, const float* dy, const float* w,
                                  const float* dsum, float mean, float rstd, int64_t c,
                                  float* dx);
  // One row's share of the weight and bias gradients, in double:
  // dw[j] += dy[j] xhat[j], db[j] += dy[j].
  void (*layer_norm_param_grads_row)(const float* x, const float* dy, float mean, float rstd,
                                     int64_t n, double* dw, double* db);
  // The sum of x[i]^2 in double, over the vector's lanes (a fixed order for
  // a given n on each version).
  double (*sum_squares)(const float* x, int64_t n);
  // AdamWUpdate (elementwise_math.h) of elements [0, n) with gradients
  // g[i] * multiplier (exactly g[i] when it is 1): every operation is
  // IEEE-rounded per element and none is fused, so the bits are the scalar
  // formula's on every version (and the CUDA backend's).
  void (*adamw)(const AdamWCoefficients& c, const float* g, float multiplier, float* w,
                float* m, float* v, int64_t n);
};

// The version this CPU runs (the widest whose instructions it has and whose
// state the OS saves), and each version on its own for the tests (Avx2 and
// Avx512 are null where the CPU lacks them).
const VectorLoops& Loops();
const VectorLoops& BaselineLoops();
const VectorLoops* Avx2Loops();
const VectorLoops* Avx512Loops();

inline void GeluTanhLoop(const float* x, float* y, int64_t n) { Loops().gelu_tanh(x, y, n); }
inline void GeluTanhBackwardLoop(const float* x, const float* dy, float* dx, int64_t n) {
  Loops().gelu_tanh_backward(x, dy, dx, n);
}
inline double ExpShiftedLoop(const float* x, float* e, int64_t n, float scale, float shift) {
  return Loops().exp_shifted(x, e, n, scale, shift);
}
inline float MaxLoop(const float* x, int64_t n) { return Loops().max(x, n); }
inline double SumSquaresLoop(const float* x, int64_t n) { return Loops().sum_squares(x, n); }

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_VECTOR_LOOPS_H_

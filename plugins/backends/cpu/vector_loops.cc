#include "plugins/backends/cpu/vector_loops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plugins/backends/cpu/gelu_vector.h"

namespace mnt::cpu {
namespace {

// Each loop written once; the functions below instantiate it per target,
// and gelu_vector.h's scalar helpers are inlined into each, compiled for it.
#define MNT_INLINE_LOOP_ inline __attribute__((always_inline))

MNT_INLINE_LOOP_ void GeluBody(const float* x, float* y, int64_t n) {
  const ExpBounds b = OpaqueExpBounds();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = GeluTanhVector(x[i], b);
}

MNT_INLINE_LOOP_ void GeluBackwardBody(const float* x, const float* dy, float* dx, int64_t n) {
  const ExpBounds b = OpaqueExpBounds();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] = GeluTanhBackwardVector(x[i], dy[i], b);
}

MNT_INLINE_LOOP_ double ExpShiftedBody(const float* x, float* e, int64_t n, float scale,
                                       float shift) {
  double sum = 0.0;
  const ExpBounds b = OpaqueExpBounds();
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    e[i] = ExpClamped(scale * x[i] - shift, b);
    sum += e[i];
  }
  return sum;
}

MNT_INLINE_LOOP_ float MaxBody(const float* x, int64_t n) {
  float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
  for (int64_t i = 0; i < n; ++i) top = std::max(top, x[i]);
  return top;
}

MNT_INLINE_LOOP_ void AddToSumsBody(const float* x, int64_t n, double* acc) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) acc[j] += x[j];
}

MNT_INLINE_LOOP_ void LayerNormRowBody(const float* x, int64_t c, const float* w,
                                       const float* b, float epsilon, float* y, float* mean,
                                       float* rstd) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < c; ++j) sum += x[j];
  const double mu = sum / c;
  double sq = 0.0;
#pragma omp simd reduction(+ : sq)
  for (int64_t j = 0; j < c; ++j) sq += (x[j] - mu) * (x[j] - mu);
  const float m = static_cast<float>(mu);
  const float rs = static_cast<float>(1.0 / std::sqrt(sq / c + epsilon));
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) y[j] = (x[j] - m) * rs * w[j] + b[j];
  *mean = m;
  *rstd = rs;
}

MNT_INLINE_LOOP_ void LayerNormBackwardRowBody(const float* x, const float* dy, const float* w,
                                               const float* dsum, float m, float rs, int64_t c,
                                               float* dx) {
  double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
#pragma omp simd reduction(+ : sum_dxhat, sum_dxhat_xhat)
  for (int64_t j = 0; j < c; ++j) {
    const float xh = (x[j] - m) * rs;
    const float dxhat = dy[j] * w[j];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += static_cast<double>(dxhat) * xh;
  }
  const float a = static_cast<float>(sum_dxhat / c);
  const float bcoef = static_cast<float>(sum_dxhat_xhat / c);
  if (dsum != nullptr) {
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) {
      const float xh = (x[j] - m) * rs;
      dx[j] = dsum[j] + rs * (dy[j] * w[j] - a - xh * bcoef);
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) {
      const float xh = (x[j] - m) * rs;
      dx[j] = rs * (dy[j] * w[j] - a - xh * bcoef);
    }
  }
}

MNT_INLINE_LOOP_ void LayerNormParamGradsRowBody(const float* x, const float* dy, float m,
                                                 float rs, int64_t n, double* dw, double* db) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float xh = (x[j] - m) * rs;
    dw[j] += static_cast<double>(dy[j]) * xh;
    db[j] += dy[j];
  }
}

MNT_INLINE_LOOP_ double SumSquaresBody(const float* x, int64_t n) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

// w, m and v are distinct tensors (the step's contract), so the elements are
// independent. sqrt vectorises because the plugin is built with
// -fno-math-errno (BUILD); sqrt and division are correctly rounded in every
// lane, and -ffp-contract=off keeps FMA out.
MNT_INLINE_LOOP_ void AdamWBody(const AdamWCoefficients& c, const float* g, float multiplier,
                                float* w, float* m, float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) AdamWUpdate(c, g[i] * multiplier, &w[i], &m[i], &v[i]);
}

#define MNT_LOOPS_FOR_TARGET_(name, attr)                                                  \
  attr void Gelu##name(const float* x, float* y, int64_t n) { GeluBody(x, y, n); }        \
  attr void GeluBackward##name(const float* x, const float* dy, float* dx, int64_t n) {   \
    GeluBackwardBody(x, dy, dx, n);                                                       \
  }                                                                                       \
  attr double ExpShifted##name(const float* x, float* e, int64_t n, float scale,          \
                               float shift) {                                             \
    return ExpShiftedBody(x, e, n, scale, shift);                                         \
  }                                                                                       \
  attr float Max##name(const float* x, int64_t n) { return MaxBody(x, n); }               \
  attr void AddToSums##name(const float* x, int64_t n, double* acc) {                     \
    AddToSumsBody(x, n, acc);                                                             \
  }                                                                                       \
  attr void LayerNormRow##name(const float* x, int64_t c, const float* w, const float* b, \
                               float epsilon, float* y, float* mean, float* rstd) {       \
    LayerNormRowBody(x, c, w, b, epsilon, y, mean, rstd);                                 \
  }                                                                                       \
  attr void LayerNormBackwardRow##name(const float* x, const float* dy, const float* w,   \
                                       const float* dsum, float m, float rs, int64_t c,   \
                                       float* dx) {                                       \
    LayerNormBackwardRowBody(x, dy, w, dsum, m, rs, c, dx);                               \
  }                                                                                       \
  attr void LayerNormParamGradsRow##name(const float* x, const float* dy, float m,        \
                                         float rs, int64_t n, double* dw, double* db) {   \
    LayerNormParamGradsRowBody(x, dy, m, rs, n, dw, db);                                  \
  }                                                                                       \
  attr double SumSquares##name(const float* x, int64_t n) { return SumSquaresBody(x, n); } \
  attr void AdamW##name(const AdamWCoefficients& c, const float* g, float multiplier,    \
                        float* w, float* m, float* v, int64_t n) {                        \
    AdamWBody(c, g, multiplier, w, m, v, n);                                              \
  }

MNT_LOOPS_FOR_TARGET_(Baseline, )
MNT_LOOPS_FOR_TARGET_(Avx2, __attribute__((target("arch=x86-64-v3"))))
// 512-bit vectors: GCC's generic tuning would keep x86-64-v4 code at 256.
MNT_LOOPS_FOR_TARGET_(Avx512,
                      __attribute__((target("arch=x86-64-v4,prefer-vector-width=512"))))

#define MNT_LOOPS_TABLE_(isa, name)                                                 \
  VectorLoops {                                                                     \
    isa, Gelu##name, GeluBackward##name, ExpShifted##name, Max##name, AddToSums##name, \
        LayerNormRow##name, LayerNormBackwardRow##name, LayerNormParamGradsRow##name, \
        SumSquares##name, AdamW##name                                                 \
  }
constexpr VectorLoops kBaseline = MNT_LOOPS_TABLE_("baseline", Baseline);
constexpr VectorLoops kAvx2 = MNT_LOOPS_TABLE_("x86-64-v3", Avx2);
constexpr VectorLoops kAvx512 = MNT_LOOPS_TABLE_("x86-64-v4", Avx512);

bool CpuHasAvx2() {
  // __builtin_cpu_supports("avx") also checks that the OS saves AVX state.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
}

bool CpuHasAvx512() {
  // libgcc reports the AVX-512 features only where the OS saves their state.
  __builtin_cpu_init();
  return CpuHasAvx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
}

}  // namespace

const VectorLoops& BaselineLoops() { return kBaseline; }

const VectorLoops* Avx2Loops() {
  static const bool has = CpuHasAvx2();
  return has ? &kAvx2 : nullptr;
}

const VectorLoops* Avx512Loops() {
  static const bool has = CpuHasAvx512();
  return has ? &kAvx512 : nullptr;
}

const VectorLoops& Loops() {
  static const VectorLoops& chosen = Avx512Loops() != nullptr ? kAvx512
                                     : Avx2Loops() != nullptr ? kAvx2
                                                              : kBaseline;
  return chosen;
}

}  // namespace mnt::cpu

#include "plugins/backends/cpu/vector_loops.h"

#include <algorithm>
#include <limits>

#include "plugins/backends/cpu/gelu_vector.h"

namespace mnt::cpu {
namespace {

// Each loop written once; the functions below instantiate it per target,
// and gelu_vector.h's scalar helpers are inlined into each, compiled for it.
#define MNT_INLINE_LOOP_ inline __attribute__((always_inline))

MNT_INLINE_LOOP_ void GeluBody(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = GeluTanhVector(x[i]);
}

MNT_INLINE_LOOP_ void GeluBackwardBody(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] = GeluTanhBackwardVector(x[i], dy[i]);
}

MNT_INLINE_LOOP_ double ExpShiftedBody(const float* x, float* e, int64_t n, float scale,
                                       float shift) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    e[i] = ExpClamped(scale * x[i] - shift);
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

#define MNT_LOOPS_FOR_TARGET_(name, attr)                                                  \
  attr void Gelu##name(const float* x, float* y, int64_t n) { GeluBody(x, y, n); }        \
  attr void GeluBackward##name(const float* x, const float* dy, float* dx, int64_t n) {   \
    GeluBackwardBody(x, dy, dx, n);                                                       \
  }                                                                                       \
  attr double ExpShifted##name(const float* x, float* e, int64_t n, float scale,          \
                               float shift) {                                             \
    return ExpShiftedBody(x, e, n, scale, shift);                                         \
  }                                                                                       \
  attr float Max##name(const float* x, int64_t n) { return MaxBody(x, n); }

MNT_LOOPS_FOR_TARGET_(Baseline, )
MNT_LOOPS_FOR_TARGET_(Avx2, __attribute__((target("arch=x86-64-v3"))))

constexpr VectorLoops kBaseline{"baseline", GeluBaseline, GeluBackwardBaseline,
                                ExpShiftedBaseline, MaxBaseline};
constexpr VectorLoops kAvx2{"x86-64-v3", GeluAvx2, GeluBackwardAvx2, ExpShiftedAvx2, MaxAvx2};

bool CpuHasAvx2() {
  // __builtin_cpu_supports("avx") also checks that the OS saves AVX state.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
}

}  // namespace

const VectorLoops& BaselineLoops() { return kBaseline; }

const VectorLoops* Avx2Loops() {
  static const bool has = CpuHasAvx2();
  return has ? &kAvx2 : nullptr;
}

const VectorLoops& Loops() {
  static const VectorLoops& chosen = Avx2Loops() != nullptr ? kAvx2 : kBaseline;
  return chosen;
}

}  // namespace mnt::cpu

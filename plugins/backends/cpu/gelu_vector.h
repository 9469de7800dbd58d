// GPT-2's tanh GELU in plain float arithmetic that the compiler vectorises
// (no libm call in the loop: scalar tanhf was a quarter of gpt2-tiny's
// single-thread profile). Uses 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), which
// also avoids the cancellation of 1 + tanh(u) for negative x, and an exp with
// range reduction to |r| <= ln2/2 and a degree-7 Taylor polynomial
// (truncation < 1e-8 relative). Measured against float64 GELU of the same
// float x (every x on a 2^-16 grid): forward and backward within 1.0e-6
// relative for x >= -3, 3e-6 for x >= -6, 1.1e-5 for x >= -9 (where |GELU| is
// below 1e-30: the float rounding of u, amplified by exp), and within 3e-32
// absolute below -9; scalar 1 + tanhf(u) cancels to exactly 0 below -9.4.
// elementwise_test checks it densely. NaN in x or dy gives NaN.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_GELU_VECTOR_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_GELU_VECTOR_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "plugins/backends/common/elementwise_math.h"

namespace mnt::cpu {

// The bounds ExpClamped clamps to, handed to the loops from OpaqueExpBounds
// instead of written as constants: with constant bounds GCC evaluates the
// clamped branches at compile time and blends them in, and for GELU it then
// divides every x by 1 + e^88 alongside, a subnormal quotient for |x| < 2
// whose microcode assist made the vectorised GELU ~10x slower (12 ns per
// element, 16% of the 8-layer GPT's bf16 step). Same values, same bits.
struct ExpBounds {
  float hi = 88.0f, lo = -87.0f;
};
// The bounds, hidden from the optimizer (an empty asm that "may change"
// them); call once per loop, outside it.
inline ExpBounds OpaqueExpBounds() {
  ExpBounds b;
  asm("" : "+m"(b.hi), "+m"(b.lo));
  return b;
}

// exp(v) for v clamped to [b.lo, b.hi] = [-87, 88] (NaN stays NaN through
// the clamp).
inline float ExpClamped(float v, const ExpBounds& b) {
  // std::min(v, c) is (c < v ? c : v): a NaN v is kept (one minss/maxss).
  v = std::max(std::min(v, b.hi), b.lo);
  // n = round(v / ln2) by the 1.5 * 2^23 trick (no rounding instruction needed).
  constexpr float kShift = 12582912.0f;
  const float t = v * 1.44269504088896341f + kShift;
  const float n = t - kShift;
  // r = v - n ln2, ln2 split so that n * hi is exact.
  const float r = (v - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n, n in [-126, 127], from t's low mantissa bits; unsigned, so a NaN's
  // bits wrap instead of overflowing (the result is NaN through p anyway).
  uint32_t ti, kbits;
  std::memcpy(&ti, &t, sizeof ti);
  std::memcpy(&kbits, &kShift, sizeof kbits);
  const uint32_t bits = (ti - kbits + 127u) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float GeluTanhVector(float x, const ExpBounds& b) {
  const float u = kGeluTanhScale * (x + kGeluTanhCubic * x * x * x);
  return x / (1.0f + ExpClamped(-2.0f * u, b));
}

inline float GeluTanhBackwardVector(float x, float dy, const ExpBounds& b) {
  const float x2 = x * x;
  const float u = kGeluTanhScale * (x + kGeluTanhCubic * x2 * x);
  const float e = ExpClamped(-2.0f * u, b);
  const float s = 1.0f / (1.0f + e);  // 0.5 (1 + tanh u)
  const float du = kGeluTanhScale * (1.0f + 3.0f * kGeluTanhCubic * x2);
  // 0.5 x (1 - tanh^2 u) du = 2 x s (1 - s) du, with 1 - s = e s.
  return dy * (s + 2.0f * x * s * (e * s) * du);
}

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_GELU_VECTOR_H_

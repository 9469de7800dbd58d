// Stochastic rounding of fp32 to bf16 (ABI 1.7, MNT_ROUNDING_STOCHASTIC):
// the optimizer's working copy, as llm.c writes its bf16 weights. 16 random
// bits are added below bf16's cut and the sum is truncated, so x rounds up
// with probability (its 16 dropped bits) / 2^16 and the expected result is x
// exactly (the two neighbours are one bf16 ulp apart, also across a binade
// edge and among denormals). Small updates that round-to-nearest would lose
// every step survive on average.
//
// The random bits are a counter-based hash of (seed, step, tensor index,
// element index): no generator state, so any thread count, the CPU and the
// CUDA backend draw the same bits, and a resumed run draws what the
// uninterrupted one would have.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_STOCHASTIC_ROUNDING_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_STOCHASTIC_ROUNDING_H_

#include <cstdint>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

// splitmix64's output function (a bijection of 64 bits, Steele, Lea and
// Flood 2014): consecutive counters come out statistically independent.
MNT_HOST_DEVICE inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// splitmix64's increment (2^64 / golden ratio, odd).
constexpr uint64_t kMix64Gamma = 0x9e3779b97f4a7c15ull;

// The key of one tensor at one step. Each coordinate goes through a round
// of its own, so neighbouring (step, tensor) pairs give unrelated keys.
MNT_HOST_DEVICE inline uint64_t StochasticRoundingKey(uint64_t seed, int64_t step,
                                                     int64_t tensor) {
  uint64_t k = Mix64(seed + kMix64Gamma);
  k = Mix64(k + static_cast<uint64_t>(step));
  return Mix64(k + static_cast<uint64_t>(tensor));
}

// Element `element`'s 16 random bits under `key` (uniform in [0, 2^16)).
MNT_HOST_DEVICE inline uint32_t StochasticRoundingBits(uint64_t key, int64_t element) {
  return static_cast<uint32_t>(
      Mix64(key + static_cast<uint64_t>(element) * kMix64Gamma) >> 48);
}

// The largest finite bf16 as fp32 bits (0x7f7f, 3.3895e38).
constexpr uint32_t kMaxFiniteBf16AsF32Bits = 0x7f7f0000u;

// x's bf16 bits, rounded toward zero after adding `random16` (< 2^16) to
// its magnitude's dropped bits. NaN, +-inf and the finite magnitudes above
// the largest finite bf16 are rounded to nearest even (F32BitsToBf16Bits):
// a finite value never becomes infinite where round-to-nearest would not
// make it so. +-0 and values bf16 holds exactly come out unchanged.
MNT_HOST_DEVICE inline uint16_t F32BitsToBf16BitsStochastic(uint32_t x, uint32_t random16) {
  if ((x & 0x7fffffffu) > kMaxFiniteBf16AsF32Bits) return F32BitsToBf16Bits(x);
  // |x| + 0xffff <= 0x7f7fffff: no carry reaches the sign or makes an inf.
  return static_cast<uint16_t>((x + (random16 & 0xffffu)) >> 16);
}

// Element `element` of a tensor keyed `key` (StochasticRoundingKey), rounded
// stochastically to bf16.
MNT_HOST_DEVICE inline uint16_t FloatToBf16BitsStochastic(float f, uint64_t key,
                                                         int64_t element) {
  return F32BitsToBf16BitsStochastic(FloatToBits(f), StochasticRoundingBits(key, element));
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_STOCHASTIC_ROUNDING_H_

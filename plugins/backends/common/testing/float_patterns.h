// Test inputs for ops that must handle every kind of float element
// (TENSOR_STATS, ...): bit patterns of F32, F16 and BF16 drawn by class
// (normal, largest finite, subnormal, signed zero, inf, NaN with any
// payload), their float64 values decoded the IEEE way with std::ldexp (not
// with the converters the backends run), and the statistics TENSOR_STATS
// must give for them. Shared by the CPU and CUDA tests and the math test.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_TESTING_FLOAT_PATTERNS_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_TESTING_FLOAT_PATTERNS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "plugins/abi/mnt_common.h"

namespace mnt::backend::testing {

struct FloatFormat {
  MNT_DType dtype;
  int bytes, exp_bits, mant_bits;
};
inline constexpr FloatFormat kFloatFormats[] = {{MNT_DTYPE_F32, 4, 8, 23},
                                                {MNT_DTYPE_F16, 2, 5, 10},
                                                {MNT_DTYPE_BF16, 2, 8, 7}};

// An element's value from its bits (NaN for any NaN).
inline double DecodeBits(const FloatFormat& f, uint32_t bits) {
  const uint32_t mant = bits & ((1u << f.mant_bits) - 1);
  const uint32_t exp = (bits >> f.mant_bits) & ((1u << f.exp_bits) - 1);
  const bool neg = (bits >> (f.mant_bits + f.exp_bits)) & 1u;
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  double v;
  if (exp == (1u << f.exp_bits) - 1) {
    v = mant != 0 ? std::numeric_limits<double>::quiet_NaN()
                  : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - f.mant_bits);
  } else {
    v = std::ldexp(static_cast<double>(mant | (1u << f.mant_bits)),
                   static_cast<int>(exp) - bias - f.mant_bits);
  }
  return neg ? -v : v;
}

// Element classes a tensor draws from.
enum FloatClass { kNormal, kLargest, kSubnormal, kZero, kInf, kNan, kFloatClasses };

// A random pattern of class `c` (random sign; random mantissa where the
// class has one).
inline uint32_t RandomPattern(const FloatFormat& f, FloatClass c, std::mt19937& rng) {
  const uint32_t exp_max = (1u << f.exp_bits) - 1, mant_mask = (1u << f.mant_bits) - 1;
  const uint32_t sign = rng() & 1u, mant = rng() & mant_mask;
  uint32_t exp = 0, m = 0;
  switch (c) {
    case kNormal: exp = 1 + rng() % (exp_max - 1); m = mant; break;
    case kLargest: exp = exp_max - 1; m = mant; break;
    case kSubnormal: exp = 0; m = mant | 1u; break;
    case kZero: exp = 0; m = 0; break;
    case kInf: exp = exp_max; m = 0; break;
    default: exp = exp_max; m = mant | 1u; break;  // NaN, any payload
  }
  return (sign << (f.exp_bits + f.mant_bits)) | (exp << f.mant_bits) | m;
}

// Patterns as the bytes of a tensor of f's dtype (little-endian).
inline std::vector<uint8_t> StorePatterns(const FloatFormat& f,
                                          const std::vector<uint32_t>& patterns) {
  std::vector<uint8_t> bytes(patterns.size() * f.bytes);
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (f.bytes == 4) {
      std::memcpy(bytes.data() + 4 * i, &patterns[i], 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(patterns[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

// What TENSOR_STATS gives for these elements, from the ABI's text.
struct ExpectedStats {
  float range[2] = {0.0f, 0.0f};  // smallest, largest finite |x|; 0, 0 when none
  int32_t counts[2] = {0, 0};     // inf-or-NaN, NaN; saturating
};

inline ExpectedStats ReferenceStats(const FloatFormat& f, const std::vector<uint32_t>& patterns) {
  double lo = std::numeric_limits<double>::infinity(), hi = -1;
  int64_t nonfinite = 0, nans = 0;
  for (uint32_t b : patterns) {
    const double v = DecodeBits(f, b);
    if (std::isnan(v)) ++nans;
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    lo = std::min(lo, std::fabs(v));
    hi = std::max(hi, std::fabs(v));
  }
  ExpectedStats s;
  if (hi >= 0) {
    s.range[0] = static_cast<float>(lo);  // exact: every F16/BF16 value is an fp32 one
    s.range[1] = static_cast<float>(hi);
  }
  s.counts[0] = static_cast<int32_t>(std::min<int64_t>(nonfinite, INT32_MAX));
  s.counts[1] = static_cast<int32_t>(std::min<int64_t>(nans, INT32_MAX));
  return s;
}

}  // namespace mnt::backend::testing

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_TESTING_FLOAT_PATTERNS_H_

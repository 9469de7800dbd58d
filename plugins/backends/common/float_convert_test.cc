#include "plugins/backends/common/float_convert.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

// ---- Independent references, written with double arithmetic ---------------

// A binary floating-point format: explicit mantissa bits, smallest normal
// exponent, largest finite value.
struct Format {
  const char* name;
  int mantissa_bits;
  int min_exponent;
  double max_finite;
};
const Format kHalf{"f16", 10, -14, 65504.0};
const Format kBf16{"bf16", 7, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)};
const Format kTf32{"tf32", 10, -126,
                   std::ldexp(2.0 - std::ldexp(1.0, -10), 127)};

// Nearest value of `fmt` to finite x, ties to the even multiple of the ulp;
// +-inf when it lies beyond the largest finite value.
double ReferenceRound(double x, const Format& fmt) {
  if (x == 0.0) return x;
  int k;
  std::frexp(std::fabs(x), &k);  // |x| in [2^(k-1), 2^k)
  const int exponent = std::max(k - 1, fmt.min_exponent);
  const double ulp = std::ldexp(1.0, exponent - fmt.mantissa_bits);
  const double q = std::fabs(x) / ulp;  // exact: divides by a power of two
  double lower = std::floor(q);
  const double frac = q - lower;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(lower, 2.0) == 1.0)) lower += 1.0;
  double r = lower * ulp;
  if (r > fmt.max_finite) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

// Decodes half / bf16 bits from the fields with ldexp.
double ReferenceDecode(uint16_t bits, int exponent_bits, int mantissa_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int mantissa = bits & ((1 << mantissa_bits) - 1);
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == (1 << exponent_bits) - 1) {
    return mantissa ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                    : sign * std::numeric_limits<double>::infinity();
  }
  if (exponent == 0) {
    return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
  }
  return sign * std::ldexp((1 << mantissa_bits) + mantissa,
                           exponent - bias - mantissa_bits);
}
double DecodeHalf(uint16_t b) { return ReferenceDecode(b, 5, 10); }
double DecodeBf16(uint16_t b) { return ReferenceDecode(b, 8, 7); }

bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// ---- Exhaustive 16-bit checks ----------------------------------------------

TEST(FloatConvertTest, HalfToFloatMatchesFieldDecodeForAllPatterns) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = HalfBitsToFloat(h);
    ASSERT_TRUE(SameValue(f, DecodeHalf(h))) << "bits 0x" << std::hex << i;
    if (std::isnan(f)) {
      EXPECT_TRUE(FloatToBits(f) & 0x00400000u) << "NaN not quiet, 0x" << std::hex << i;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0);
    }
  }
}

TEST(FloatConvertTest, HalfRoundTripsBitExactly) {
  int nans = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const uint16_t back = FloatToHalfBits(HalfBitsToFloat(h));
    const bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (is_nan) {
      ++nans;
      // Still NaN, same sign and payload, quiet bit set.
      EXPECT_EQ(back | 0x0200, h | 0x0200) << std::hex << i;
      EXPECT_TRUE(back & 0x0200);
    } else {
      ASSERT_EQ(back, h) << "bits 0x" << std::hex << i;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(FloatConvertTest, Bf16ToFloatMatchesFieldDecodeForAllPatterns) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    ASSERT_TRUE(SameValue(Bf16BitsToFloat(b), DecodeBf16(b)))
        << "bits 0x" << std::hex << i;
  }
}

TEST(FloatConvertTest, Bf16RoundTripsBitExactly) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    const uint16_t back = FloatToBf16Bits(Bf16BitsToFloat(b));
    const bool is_nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    if (is_nan) {
      EXPECT_EQ(back | 0x0040, b | 0x0040) << std::hex << i;
      EXPECT_TRUE(back & 0x0040);
    } else {
      ASSERT_EQ(back, b) << "bits 0x" << std::hex << i;
    }
  }
}

// ---- fp32 -> narrower against the double reference -------------------------

void CheckOne(uint32_t bits, const Format& fmt) {
  const float f = BitsToFloat(bits);
  double got;
  if (fmt.mantissa_bits == 10 && fmt.min_exponent == -14) {
    got = DecodeHalf(FloatToHalfBits(f));
  } else if (fmt.mantissa_bits == 7) {
    got = DecodeBf16(FloatToBf16Bits(f));
  } else {
    got = RoundToTf32(f);
  }
  if (std::isnan(f)) {
    ASSERT_TRUE(std::isnan(got)) << fmt.name << " bits 0x" << std::hex << bits;
    ASSERT_EQ(std::signbit(got), std::signbit(f));
    return;
  }
  const double want = std::isinf(f) ? static_cast<double>(f)
                                    : ReferenceRound(f, fmt);
  ASSERT_TRUE(SameValue(got, want))
      << fmt.name << " bits 0x" << std::hex << bits << std::dec << " value "
      << f << " got " << got << " want " << want;
}

std::vector<uint32_t> EdgeBits() {
  std::vector<uint32_t> v = {
      0x00000000, 0x80000000,                  // +-0
      0x7f800000, 0xff800000,                  // +-inf
      0x7fc00000, 0xffc00000, 0x7f800001,      // NaNs (quiet, signalling)
      0x7fbfffff, 0xff812345, 0x7fffffff,      // NaN payloads
      0x00000001, 0x007fffff, 0x00800000,      // fp32 subnormals / min normal
      0x7f7fffff, 0xff7fffff,                  // fp32 max
      0x477fe000, 0x477fefff, 0x477ff000,      // 65504, just below/at 65520
      0x477ff001, 0x47800000,                  // above 65520, 65536
      0x38800000, 0x387fffff, 0x387fc000,      // half min normal and below
      0x33800000, 0x33000000, 0x33000001,      // half min subnormal, 2^-25 tie
      0x32ffffff, 0x33c00000, 0x34200000,      // below tie; 1.5 / 2.5 ulp ties
      0x3f801000, 0x3f803000, 0x3f801001,      // half ties at 1.0 (even / odd)
      0x3f808000, 0x3f818000, 0x3f808001,      // bf16 ties at 1.0
      0x3f800fff, 0x7f7f8000, 0x7f7f7fff,      // bf16 overflow tie / below
      0x7f7ff000, 0x7f7fefff,                  // tf32 overflow tie / below
      0x3f800000, 0xbf800000, 0x3eaaaaab,      // 1, -1, 1/3
  };
  return v;
}

TEST(FloatConvertTest, EdgeValuesMatchReference) {
  for (const Format* fmt : {&kHalf, &kBf16, &kTf32}) {
    for (uint32_t bits : EdgeBits()) CheckOne(bits, *fmt);
  }
  // A few hand-checked results.
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65519.99f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-65520.0f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.5f, -24)), 0x0002);  // tie up to even
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBf16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie even
  EXPECT_EQ(FloatToBf16Bits(BitsToFloat(0x3f818000)), 0x3f82);       // tie up
  EXPECT_EQ(FloatToBf16Bits(BitsToFloat(0x7f7f8000)), 0x7f80);       // -> inf
  EXPECT_EQ(FloatToHalfBits(BitsToFloat(0xffc12345)) & 0xfe00, 0xfe00);
  EXPECT_EQ(F32BitsToTf32Bits(0x7fc00001), 0x7fc00001u);  // NaN untouched
  EXPECT_EQ(F32BitsToTf32Bits(0x3f801000), 0x3f800000u);  // tie to even
  EXPECT_EQ(F32BitsToTf32Bits(0x3f803000), 0x3f804000u);  // tie up
}

TEST(FloatConvertTest, RandomFloatsMatchReference) {
  const uint32_t seed = std::random_device{}();
  std::printf("FloatConvertTest seed %u\n", seed);
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  constexpr int kSamples = 1 << 20;
  for (int i = 0; i < kSamples; ++i) {
    uint32_t bits = rng();
    if (i & 1) {
      // Half of the samples have exponents near the 16-bit ranges, where
      // subnormal and overflow handling matters.
      const uint32_t exponent = 95 + rng() % 60;  // 2^-32 .. 2^27
      bits = (bits & 0x807fffffu) | (exponent << 23);
    }
    CheckOne(bits, kHalf);
    CheckOne(bits, kBf16);
    CheckOne(bits, kTf32);
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(FloatConvertTest, RoundToComputeUsesTheOperandFormat) {
  const float x = 1.0f + std::ldexp(1.0f, -9) + std::ldexp(1.0f, -20);
  EXPECT_EQ(RoundToCompute(x, MNT_COMPUTE_F32), x);
  EXPECT_EQ(RoundToCompute(x, MNT_COMPUTE_TF32), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(RoundToCompute(x, MNT_COMPUTE_F16), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(RoundToCompute(x, MNT_COMPUTE_BF16), 1.0f);
  // Range differs: 1e5 overflows half but not bf16/tf32.
  EXPECT_TRUE(std::isinf(RoundToCompute(1e5f, MNT_COMPUTE_F16)));
  EXPECT_EQ(RoundToCompute(1e5f, MNT_COMPUTE_BF16), 99840.0f);
}

}  // namespace
}  // namespace mnt

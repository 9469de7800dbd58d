// fp8_convert.h against references written here with double arithmetic from
// the formats' definitions (bit fields -> value by formula, nearest-even
// rounding by floor on the exact quotient), never by calling the code under
// test: every code decoded, every number round-tripped, dense sweeps at
// every rounding boundary, the specials in both saturation modes, and
// random fp32 bit patterns (fresh seed each run, printed).
#include "plugins/backends/common/fp8_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

struct Fp8Format {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  bool has_inf;       // E5M2: exponent all ones = inf/NaN; E4M3: only S.1111.111 is NaN
  double max_finite;  // from the spec, checked against the field decode below
  uint8_t (*encode)(float, bool);
  float (*decode)(uint8_t);
  float (*round)(float, bool);
};

const Fp8Format kE4M3{"E4M3", 4, 3, false, 448.0,
                      FloatToFp8E4M3Bits, Fp8E4M3BitsToFloat, RoundToFp8E4M3};
const Fp8Format kE5M2{"E5M2", 5, 2, true, 57344.0,
                      FloatToFp8E5M2Bits, Fp8E5M2BitsToFloat, RoundToFp8E5M2};

int Bias(const Fp8Format& fmt) { return (1 << (fmt.exponent_bits - 1)) - 1; }

// ---- Independent references -------------------------------------------------

// The value of `code` from its fields.
double ReferenceDecode(uint8_t code, const Fp8Format& fmt) {
  const int m_bits = fmt.mantissa_bits;
  const int e_max = (1 << fmt.exponent_bits) - 1;
  const int exponent = (code >> m_bits) & e_max;
  const int mantissa = code & ((1 << m_bits) - 1);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (exponent == e_max) {
    if (fmt.has_inf) return mantissa ? std::copysign(kNan, sign) : sign * kInf;
    if (mantissa == (1 << m_bits) - 1) return std::copysign(kNan, sign);
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - Bias(fmt) - m_bits);
  return sign * std::ldexp((1 << m_bits) + mantissa, exponent - Bias(fmt) - m_bits);
}

bool IsNanCode(uint8_t code, const Fp8Format& fmt) {
  return std::isnan(ReferenceDecode(code, fmt));
}

// Nearest value to finite x with the format's precision and subnormals but
// an exponent range that never ends upward, ties to the even multiple of
// the ulp. Exact: |x| / ulp divides by a power of two.
double ReferenceRoundUnbounded(double x, const Fp8Format& fmt) {
  if (x == 0.0) return x;
  int k;
  std::frexp(std::fabs(x), &k);  // |x| in [2^(k-1), 2^k)
  const int exponent = std::max(k - 1, 1 - Bias(fmt));
  const double ulp = std::ldexp(1.0, exponent - fmt.mantissa_bits);
  const double q = std::fabs(x) / ulp;
  double n = std::floor(q);
  const double frac = q - n;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) == 1.0)) n += 1.0;
  return std::copysign(n * ulp, x);
}

// Codes by value, from the field decode.
struct Table {
  std::map<double, int> code_of;  // non-negative finite values -> code
  std::vector<double> values;     // the same, ascending
  int max_code = -1;
  int inf_code = -1;              // +inf (E5M2 only)
};

Table MakeTable(const Fp8Format& fmt) {
  Table t;
  for (int c = 0; c < 0x80; ++c) {
    const double v = ReferenceDecode(static_cast<uint8_t>(c), fmt);
    if (std::isnan(v)) continue;
    if (std::isinf(v)) {
      t.inf_code = c;
      continue;
    }
    t.code_of[v] = c;
  }
  for (const auto& kv : t.code_of) t.values.push_back(kv.first);
  t.max_code = t.code_of.rbegin()->second;
  return t;
}

const Table& TableOf(const Fp8Format& fmt) {
  static const Table e4m3 = MakeTable(kE4M3);
  static const Table e5m2 = MakeTable(kE5M2);
  return &fmt == &kE4M3 ? e4m3 : e5m2;
}

// The code the header's rules give for f.
int ReferenceEncode(float f, const Fp8Format& fmt, bool saturate) {
  const Table& t = TableOf(fmt);
  const int sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return sign | 0x7F;  // the all-ones NaN, sign kept
  const double r = std::isinf(f) ? kInf : ReferenceRoundUnbounded(f, fmt);
  if (std::fabs(r) > fmt.max_finite) {
    if (saturate) return sign | t.max_code;
    return sign | (fmt.has_inf ? t.inf_code : 0x7F);  // E4M3: NaN
  }
  return sign | t.code_of.at(std::fabs(r));
}

bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// f encoded (and rounded) in both saturation modes as the reference says.
testing::AssertionResult EncodesLikeReference(float f, const Fp8Format& fmt) {
  for (const bool saturate : {false, true}) {
    const int got = fmt.encode(f, saturate);
    const int want = ReferenceEncode(f, fmt, saturate);
    auto failure = [&]() {
      char text[160];
      std::snprintf(text, sizeof(text), "%s saturate=%d input 0x%08x (%.9g): got 0x%02x want 0x%02x",
                    fmt.name, saturate, FloatToBits(f), static_cast<double>(f), got, want);
      return testing::AssertionFailure() << text;
    };
    if (got != want) return failure();
    // A NaN must come out a NaN by the field decode, not only equal to the
    // code the rules name; a number may become NaN only by overflowing E4M3
    // unsaturated.
    const bool nan_out = IsNanCode(static_cast<uint8_t>(got), fmt);
    if (std::isnan(f) && !nan_out) return failure() << " (NaN in, number out)";
    if (!std::isnan(f) && nan_out && (saturate || fmt.has_inf)) {
      return failure() << " (number in, NaN out)";
    }
    if (!SameValue(fmt.round(f, saturate), ReferenceDecode(static_cast<uint8_t>(want), fmt))) {
      return failure() << " (RoundTo gives " << fmt.round(f, saturate) << ")";
    }
  }
  return testing::AssertionSuccess();
}

// Checks f and -f; stops the caller's loop at the first failure.
#define ASSERT_ENCODES(f, fmt)                              \
  do {                                                      \
    ASSERT_TRUE(EncodesLikeReference((f), (fmt)));          \
    ASSERT_TRUE(EncodesLikeReference(-(f), (fmt)));         \
  } while (0)

float Bits(uint32_t u) { return BitsToFloat(u); }

// The next value past the largest finite one if the exponent range went on
// (E4M3 480, E5M2 65536): the far end of the overflow boundary's interval.
double VirtualNext(const Fp8Format& fmt) {
  int k;
  std::frexp(fmt.max_finite, &k);
  return fmt.max_finite + std::ldexp(1.0, k - 1 - fmt.mantissa_bits);
}

class Fp8ConvertTest : public testing::TestWithParam<const Fp8Format*> {};

// ---- (1) Every code decodes to its field value -------------------------------

TEST_P(Fp8ConvertTest, EveryCodeDecodesToItsFieldValue) {
  const Fp8Format& fmt = *GetParam();
  int nans = 0, infs = 0;
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float got = fmt.decode(code);
    const double want = ReferenceDecode(code, fmt);
    ASSERT_TRUE(SameValue(got, want)) << fmt.name << " code 0x" << std::hex << c << ": got "
                                      << got << " want " << want;
    if (std::isnan(got)) {
      ++nans;
      EXPECT_EQ(FloatToBits(got) & 0x7fffffffu, 0x7fc00000u) << "quiet NaN, code 0x" << std::hex << c;
      EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << "NaN sign, code 0x" << std::hex << c;
    }
    if (std::isinf(got)) ++infs;
  }
  EXPECT_EQ(nans, fmt.has_inf ? 6 : 2);
  EXPECT_EQ(infs, fmt.has_inf ? 2 : 0);
  // The spec's constants agree with the field decode.
  const Table& t = TableOf(fmt);
  EXPECT_EQ(t.values.back(), fmt.max_finite);
  EXPECT_EQ(t.values[1], std::ldexp(1.0, 1 - Bias(fmt) - fmt.mantissa_bits));
  EXPECT_EQ(t.values.size(), fmt.has_inf ? 124u : 127u);  // incl. zero
}

TEST(Fp8ConvertFixedTest, KnownCodes) {
  EXPECT_EQ(Fp8E4M3BitsToFloat(0x38), 1.0f);
  EXPECT_EQ(Fp8E4M3BitsToFloat(0x7E), 448.0f);
  EXPECT_EQ(Fp8E4M3BitsToFloat(0xFE), -448.0f);
  EXPECT_EQ(Fp8E4M3BitsToFloat(0x78), 256.0f);  // S.1111.000 is a number
  EXPECT_EQ(Fp8E4M3BitsToFloat(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(Fp8E4M3BitsToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(FloatToBits(Fp8E4M3BitsToFloat(0x80)), 0x80000000u);
  EXPECT_TRUE(std::isnan(Fp8E4M3BitsToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(Fp8E4M3BitsToFloat(0xFF)));
  EXPECT_EQ(Fp8E5M2BitsToFloat(0x3C), 1.0f);
  EXPECT_EQ(Fp8E5M2BitsToFloat(0x7B), 57344.0f);
  EXPECT_EQ(Fp8E5M2BitsToFloat(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(Fp8E5M2BitsToFloat(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(Fp8E5M2BitsToFloat(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Fp8E5M2BitsToFloat(0xFC), -std::numeric_limits<float>::infinity());
  for (int c : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) {
    EXPECT_TRUE(std::isnan(Fp8E5M2BitsToFloat(static_cast<uint8_t>(c)))) << c;
  }
  EXPECT_EQ(kFp8E4M3Max, 448.0f);
  EXPECT_EQ(kFp8E5M2Max, 57344.0f);
}

// ---- (2) Every number round-trips ---------------------------------------------

TEST_P(Fp8ConvertTest, EveryNumberRoundTrips) {
  const Fp8Format& fmt = *GetParam();
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    if (IsNanCode(code, fmt)) continue;
    const float f = fmt.decode(code);
    if (std::isinf(f)) {
      // Only without saturation; saturated, inf clips (SpecialsFollowTheRules).
      EXPECT_EQ(fmt.encode(f, false), code) << fmt.name << " 0x" << std::hex << c;
      continue;
    }
    EXPECT_EQ(fmt.encode(f, false), code) << fmt.name << " 0x" << std::hex << c;
    EXPECT_EQ(fmt.encode(f, true), code) << fmt.name << " 0x" << std::hex << c;
    EXPECT_EQ(FloatToBits(fmt.round(f, true)), FloatToBits(f)) << fmt.name << " 0x" << std::hex << c;
  }
}

// ---- (3) Rounding boundaries ----------------------------------------------------

// For each pair of adjacent non-negative values (0 and the smallest
// subnormal, ..., the largest finite value and the virtual next one): the
// pair itself, the midpoint and the 16 fp32 values on either side of it and
// of the lower value, with both signs.
TEST_P(Fp8ConvertTest, AroundEveryMidpoint) {
  const Fp8Format& fmt = *GetParam();
  std::vector<double> values = TableOf(fmt).values;
  values.push_back(VirtualNext(fmt));
  int checked = 0;
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    const float lo = static_cast<float>(values[i]);
    const float mid = static_cast<float>((values[i] + values[i + 1]) / 2);
    ASSERT_EQ(static_cast<double>(mid), (values[i] + values[i + 1]) / 2) << "midpoint exact in fp32";
    for (const float centre : {lo, mid}) {
      float up = centre, down = centre;
      ASSERT_ENCODES(centre, fmt);
      for (int k = 0; k < 16; ++k) {
        up = std::nextafter(up, kInf);
        down = std::nextafter(down, -kInf);
        ASSERT_ENCODES(up, fmt);
        ASSERT_ENCODES(down, fmt);
        checked += 2;
      }
    }
  }
  std::printf("%s: %d points around %zu midpoints\n", fmt.name, 2 * checked, values.size() - 1);
}

// The ties, stated without the rounding reference: a midpoint goes to the
// neighbour with the even code (mantissa LSB), into and within the
// subnormals and at the top.
TEST_P(Fp8ConvertTest, TiesGoToTheEvenCode) {
  const Fp8Format& fmt = *GetParam();
  const Table& t = TableOf(fmt);
  for (size_t i = 0; i + 1 < t.values.size(); ++i) {
    const float mid = static_cast<float>((t.values[i] + t.values[i + 1]) / 2);
    const int lo = t.code_of.at(t.values[i]), hi = t.code_of.at(t.values[i + 1]);
    ASSERT_EQ(hi, lo + 1);
    const int even = (lo % 2 == 0) ? lo : hi;
    for (const bool saturate : {false, true}) {
      EXPECT_EQ(fmt.encode(mid, saturate), even) << fmt.name << " " << mid;
      EXPECT_EQ(fmt.encode(-mid, saturate), 0x80 | even) << fmt.name << " " << -mid;
    }
  }
}

TEST(Fp8ConvertFixedTest, NamedBoundaries) {
  const float e4_unit = std::ldexp(1.0f, -9), e5_unit = std::ldexp(1.0f, -16);
  // Half the smallest subnormal is a tie with zero: zero, sign kept.
  EXPECT_EQ(FloatToFp8E4M3Bits(e4_unit / 2), 0x00);
  EXPECT_EQ(FloatToFp8E4M3Bits(-e4_unit / 2), 0x80);
  EXPECT_EQ(FloatToFp8E4M3Bits(std::nextafter(e4_unit / 2, 1.0f)), 0x01);
  EXPECT_EQ(FloatToFp8E4M3Bits(1.5f * e4_unit), 0x02);  // 1.5 units -> 2 (even)
  EXPECT_EQ(FloatToFp8E4M3Bits(2.5f * e4_unit), 0x02);  // 2.5 units -> 2 (even)
  EXPECT_EQ(FloatToFp8E4M3Bits(7.5f * e4_unit), 0x08);  // into the smallest normal
  EXPECT_EQ(FloatToFp8E5M2Bits(e5_unit / 2), 0x00);
  EXPECT_EQ(FloatToFp8E5M2Bits(-e5_unit / 2), 0x80);
  EXPECT_EQ(FloatToFp8E5M2Bits(3.5f * e5_unit), 0x04);
  // E4M3's top: 464 is halfway between 448 (even) and 480 (no such value).
  EXPECT_EQ(FloatToFp8E4M3Bits(464.0f), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3Bits(464.0f, false), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3Bits(std::nextafter(464.0f, 1e9f), false), 0x7F);  // NaN
  EXPECT_EQ(FloatToFp8E4M3Bits(std::nextafter(464.0f, 1e9f), true), 0x7E);
  EXPECT_EQ(FloatToFp8E4M3Bits(-std::nextafter(464.0f, 1e9f), false), 0xFF);
  EXPECT_EQ(FloatToFp8E4M3Bits(-1e30f, true), 0xFE);
  // E5M2's top: 61440 is halfway between 57344 (odd) and 65536: overflow.
  EXPECT_EQ(FloatToFp8E5M2Bits(61440.0f, false), 0x7C);
  EXPECT_EQ(FloatToFp8E5M2Bits(61440.0f, true), 0x7B);
  EXPECT_EQ(FloatToFp8E5M2Bits(std::nextafter(61440.0f, 0.0f), false), 0x7B);
  EXPECT_EQ(FloatToFp8E5M2Bits(-61440.0f, false), 0xFC);
  EXPECT_EQ(FloatToFp8E5M2Bits(-1e30f, true), 0xFB);
  EXPECT_EQ(RoundToFp8E4M3(1000.0f), 448.0f);
  EXPECT_TRUE(std::isnan(RoundToFp8E4M3(1000.0f, false)));
  EXPECT_EQ(RoundToFp8E5M2(-1e6f), -57344.0f);
  EXPECT_EQ(RoundToFp8E5M2(-1e6f, false), -std::numeric_limits<float>::infinity());
}

// Every fp32 pattern within 2^16 of the largest finite value, the overflow
// midpoint and the virtual next value; every 61st pattern from a quarter of
// the smallest subnormal to twice the smallest normal; every 4099th
// pattern over the whole finite range. Both signs.
TEST_P(Fp8ConvertTest, DenseSweeps) {
  const Fp8Format& fmt = *GetParam();
  const double top[] = {fmt.max_finite, (fmt.max_finite + VirtualNext(fmt)) / 2, VirtualNext(fmt)};
  for (const double centre : top) {
    const uint32_t c = FloatToBits(static_cast<float>(centre));
    for (uint32_t u = c - (1u << 16); u <= c + (1u << 16); ++u) ASSERT_ENCODES(Bits(u), fmt);
  }
  const double unit = std::ldexp(1.0, 1 - Bias(fmt) - fmt.mantissa_bits);
  const uint32_t sub_lo = FloatToBits(static_cast<float>(unit / 4));
  const uint32_t sub_hi = FloatToBits(static_cast<float>(std::ldexp(2.0, 1 - Bias(fmt))));
  for (uint32_t u = sub_lo; u <= sub_hi; u += 61) ASSERT_ENCODES(Bits(u), fmt);
  for (uint32_t u = 0; u < 0x7f800000u; u += 4099) ASSERT_ENCODES(Bits(u), fmt);
}

// ---- (4) Specials -----------------------------------------------------------------

TEST_P(Fp8ConvertTest, SpecialsFollowTheRules) {
  const Fp8Format& fmt = *GetParam();
  const Table& t = TableOf(fmt);
  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                           0x7fbfffffu, 0xffbfffffu, 0x7fffffffu, 0xffffffffu,
                           0x7fe00000u, 0x7f812345u};
  for (const uint32_t n : nans) {
    for (const bool saturate : {false, true}) {
      const uint8_t got = fmt.encode(Bits(n), saturate);
      EXPECT_TRUE(IsNanCode(got, fmt)) << fmt.name << " NaN 0x" << std::hex << n << " -> 0x" << int{got};
      EXPECT_EQ(got, (n >> 31) ? 0xFF : 0x7F) << fmt.name << " NaN 0x" << std::hex << n;
      EXPECT_TRUE(std::isnan(fmt.round(Bits(n), saturate)));
    }
    EXPECT_TRUE(EncodesLikeReference(Bits(n), fmt));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float big[] = {inf, std::numeric_limits<float>::max(), 1e20f};
  for (const float f : big) {
    for (const float s : {1.0f, -1.0f}) {
      const int sign = s < 0 ? 0x80 : 0;
      EXPECT_EQ(fmt.encode(s * f, true), sign | t.max_code) << fmt.name << " " << s * f;
      const uint8_t unsat = fmt.encode(s * f, false);
      if (fmt.has_inf) {
        EXPECT_EQ(unsat, sign | 0x7C) << fmt.name << " " << s * f;
        EXPECT_EQ(fmt.round(s * f, false), s * inf);
      } else {
        EXPECT_EQ(unsat, sign | 0x7F) << fmt.name << " " << s * f;
        EXPECT_TRUE(IsNanCode(unsat, fmt));
      }
      EXPECT_EQ(fmt.round(s * f, true), s * static_cast<float>(fmt.max_finite));
    }
  }
  // Zeros, fp32 subnormals and tiny normals: zero with the input's sign.
  for (const uint32_t u : {0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x30000000u}) {
    for (const bool saturate : {false, true}) {
      EXPECT_EQ(fmt.encode(Bits(u), saturate), 0x00) << std::hex << u;
      EXPECT_EQ(fmt.encode(Bits(u | 0x80000000u), saturate), 0x80) << std::hex << u;
    }
  }
}

// ---- (5) Random fp32 bit patterns --------------------------------------------------

// 10^6 uniformly random patterns (every exponent, NaNs and infs included),
// and 10^6 more with the exponent drawn from around the format's range,
// where most of the rounding happens.
TEST_P(Fp8ConvertTest, RandomPatternsMatchReference) {
  const Fp8Format& fmt = *GetParam();
  const uint32_t seed = std::random_device{}();
  std::printf("Fp8ConvertTest %s seed %u\n", fmt.name, seed);
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int i = 0; i < 1000000; ++i) ASSERT_TRUE(EncodesLikeReference(Bits(rng()), fmt));
  const int lowest = 127 + 1 - Bias(fmt) - fmt.mantissa_bits - 3;  // below half a unit
  int k;
  std::frexp(fmt.max_finite, &k);
  const int highest = 127 + k + 1;  // beyond the overflow boundary
  std::uniform_int_distribution<int> exponent(lowest, highest);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t u = (rng() & 0x807fffffu) | (static_cast<uint32_t>(exponent(rng)) << 23);
    ASSERT_TRUE(EncodesLikeReference(Bits(u), fmt));
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8ConvertTest, testing::Values(&kE4M3, &kE5M2),
                         [](const testing::TestParamInfo<const Fp8Format*>& info) {
                           return std::string(info.param->name);
                         });

}  // namespace
}  // namespace mnt

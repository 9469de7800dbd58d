// fp8_scale_math.h (MNT_OP_FP8_SCALE_UPDATE's per-tensor rule) against a
// reference written from the ABI text in double precision:
//  - the history: rolled and overwritten exactly as specified (bit-exact;
//    nothing is computed, values only move);
//  - the scale: the ABI fixes it as the fp32 quotient fp8_max / r, rounded
//    to nearest even, times 2^-margin rounded once more. The reference forms
//    the quotient in double and rounds it to fp32 (double rounding of a
//    quotient of two floats through double is exact rounding), the margin
//    with std::ldexp: bit-exact. Independently, the scale is within two
//    fp32 roundings (2 * 2^-24 relative, or 2^-149 absolute once it is
//    subnormal) of the real value fp8_max / r / 2^margin in long double;
//  - scale_inv: bit-exact to 1 / scale rounded once, within 2^-24 relative
//    of the real reciprocal (scale_inv normal).
// NaN never passes: every compared value must be finite and equal unless
// the case expects a NaN. Fresh random inputs every run, the seed printed.
#include "plugins/backends/common/fp8_scale_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kE4M3Max = 448.0f, kE5M2Max = 57344.0f;

uint32_t Seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed %u\n", test, seed);
  return seed;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Same bits (any NaN equals any NaN only where `nan_ok`).
::testing::AssertionResult SameBits(float got, float want, bool nan_ok = false) {
  if (std::isnan(want) && nan_ok) {
    if (std::isnan(got)) return ::testing::AssertionSuccess();
  } else if (!std::isnan(got) && Bits(got) == Bits(want)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << got << " (0x" << std::hex << Bits(got)
                                       << "), want " << want << " (0x" << Bits(want) << ")";
}

// One tensor: its history column (row 0 first) and scale.
struct Tensor {
  float amax;
  std::vector<float> history;  // H rows
  float scale;
};

struct Params {
  float fp8_max;
  int32_t margin;
  bool most_recent;
  int64_t history_length;
};

struct Result {
  std::vector<float> history;
  float scale, scale_inv;
};

// The ABI text, step by step, in double.
Result Reference(const Tensor& t, const Params& p) {
  Result r{t.history, t.scale, 0.0f};
  // 1. A finite amax rolls the history down and becomes row 0.
  if (std::isfinite(t.amax)) {
    std::rotate(r.history.rbegin(), r.history.rbegin() + 1, r.history.rend());
    r.history[0] = t.amax;
  }
  // 2. The reduction, NaN winning.
  double amax = r.history[0];
  if (!p.most_recent) {
    for (int64_t h = 0; h < p.history_length; ++h) {
      const double v = r.history[h];
      if (std::isnan(v) || std::isnan(amax)) {
        amax = std::numeric_limits<double>::quiet_NaN();
      } else {
        amax = std::max(amax, v);
      }
    }
  }
  // 3. The fp32 quotient, then the margin rounded once, when r > 0 and the
  // result is finite and > 0.
  if (amax > 0.0) {
    const float q = static_cast<float>(static_cast<double>(p.fp8_max) / amax);
    const float s = static_cast<float>(std::ldexp(static_cast<double>(q), -p.margin));
    if (std::isfinite(s) && s > 0.0f) r.scale = s;
  }
  // 4. The reciprocal rounded once.
  r.scale_inv = static_cast<float>(1.0 / static_cast<double>(r.scale));
  return r;
}

Result Update(const Tensor& t, const Params& p) {
  Result r{t.history, t.scale, -12345.0f};
  Fp8ScaleUpdateOne(t.amax, r.history.data(), static_cast<int64_t>(r.history.size()), 1,
                    p.history_length, p.most_recent, p.fp8_max, p.margin, &r.scale,
                    &r.scale_inv);
  return r;
}

// The same tensor as column `col` of an [H, N] history: the stride is used.
Result UpdateStrided(const Tensor& t, const Params& p, int64_t n, int64_t col) {
  const int64_t rows = static_cast<int64_t>(t.history.size());
  std::vector<float> history(rows * n, -7.0f);
  for (int64_t h = 0; h < rows; ++h) history[h * n + col] = t.history[h];
  Result r{std::vector<float>(rows), t.scale, -12345.0f};
  Fp8ScaleUpdateOne(t.amax, history.data() + col, rows, n, p.history_length, p.most_recent,
                    p.fp8_max, p.margin, &r.scale, &r.scale_inv);
  for (int64_t h = 0; h < rows; ++h) {
    for (int64_t c = 0; c < n; ++c) {
      if (c == col) r.history[h] = history[h * n + c];
      else EXPECT_EQ(history[h * n + c], -7.0f) << "another column was written";
    }
  }
  return r;
}

::testing::AssertionResult SameResult(const Result& got, const Result& want) {
  for (size_t h = 0; h < want.history.size(); ++h) {
    ::testing::AssertionResult same = SameBits(got.history[h], want.history[h]);
    if (!same) return same << " at history row " << h;
  }
  ::testing::AssertionResult same = SameBits(got.scale, want.scale);
  if (!same) return same << " (scale)";
  same = SameBits(got.scale_inv, want.scale_inv);
  if (!same) return same << " (scale_inv)";
  return ::testing::AssertionSuccess();
}

// The scale against the real value fp8_max / r / 2^margin (long double):
// two roundings, 2 * 2^-24 relative, or 2^-149 absolute when subnormal.
::testing::AssertionResult NearReal(float scale, float fp8_max, double r, int32_t margin) {
  const long double real =
      std::ldexp(static_cast<long double>(fp8_max) / static_cast<long double>(r), -margin);
  const long double err = std::fabs(static_cast<long double>(scale) - real);
  const long double tol = real >= std::numeric_limits<float>::min()
                              ? 2 * std::ldexp(1.0L, -24) * real
                              : std::ldexp(1.0L, -149);
  if (std::isfinite(scale) && err <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "scale " << scale << " vs real "
                                       << static_cast<double>(real) << " (error "
                                       << static_cast<double>(err) << ", tolerance "
                                       << static_cast<double>(tol) << ")";
}

class Fp8ScaleMathTest : public ::testing::Test {
 protected:
  // |v| log-uniform over 2^lo .. 2^hi.
  float LogUniform(double lo, double hi) {
    return static_cast<float>(std::exp2(std::uniform_real_distribution<double>(lo, hi)(rng_)));
  }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937 rng_;
};

TEST_F(Fp8ScaleMathTest, RandomTensorsMatchTheReferenceBitForBit) {
  rng_.seed(Seed("RandomTensorsMatchTheReferenceBitForBit"));
  int updated = 0, kept = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t rows = Int(1, 16);
    Params p{Int(0, 1) ? kE4M3Max : kE5M2Max,
             Int(0, 9) < 7 ? Int(0, 4) : Int(0, 9) < 8 ? Int(100, 160) : Int(200, 400),
             Int(0, 2) == 0, Int(1, static_cast<int>(rows))};
    if (Int(0, 19) == 0) p.fp8_max = LogUniform(-10, 20);  // any finite > 0
    Tensor t{LogUniform(-30, 30), {}, LogUniform(-10, 10)};
    // A few amax specials: zero, a non-finite one (must not enter), tiny.
    switch (Int(0, 9)) {
      case 0: t.amax = 0.0f; break;
      case 1: t.amax = kInf; break;
      case 2: t.amax = std::nanf(""); break;
      case 3: t.amax = LogUniform(-149, -126); break;  // subnormal: 448/a overflows
      default: break;
    }
    const int zero_rows = Int(0, 3) == 0 ? static_cast<int>(rows) : Int(0, 2);
    for (int64_t h = 0; h < rows; ++h) {
      t.history.push_back(h < zero_rows ? 0.0f : LogUniform(-30, 30));
    }
    std::shuffle(t.history.begin(), t.history.end(), rng_);
    SCOPED_TRACE(::testing::Message()
                 << "trial " << trial << ": H " << rows << " history_length "
                 << p.history_length << (p.most_recent ? " MOST_RECENT" : " MAX")
                 << " fp8_max " << p.fp8_max << " margin " << p.margin << " amax "
                 << t.amax << " scale " << t.scale);
    const Result want = Reference(t, p);
    const Result got = Update(t, p);
    ASSERT_TRUE(SameResult(got, want));
    if (trial % 97 == 0) {
      ASSERT_TRUE(SameResult(UpdateStrided(t, p, 5, trial % 5), want));
    }
    // The higher-precision view of a scale that was updated.
    if (Bits(got.scale) != Bits(t.scale)) {
      ++updated;
      double r = got.history[0];
      if (!p.most_recent) {
        r = *std::max_element(got.history.begin(), got.history.begin() + p.history_length);
      }
      ASSERT_TRUE(NearReal(got.scale, p.fp8_max, r, p.margin));
    } else {
      ++kept;
    }
    const long double real = 1.0L / static_cast<long double>(got.scale);
    if (real >= std::numeric_limits<float>::min() && real < std::numeric_limits<float>::max()) {
      ASSERT_LE(std::fabs(got.scale_inv - real), std::ldexp(1.0L, -24) * real)
          << "scale_inv " << got.scale_inv;
    }
  }
  // Both branches were exercised.
  EXPECT_GT(updated, 1000);
  EXPECT_GT(kept, 1000);
}

TEST_F(Fp8ScaleMathTest, ZeroHistoryKeepsTheScale) {
  rng_.seed(Seed("ZeroHistoryKeepsTheScale"));
  const float scale = LogUniform(-5, 5);
  // All zero, amax 0: the history rolls (zeros) and the scale stays.
  Tensor t{0.0f, std::vector<float>(4, 0.0f), scale};
  Result got = Update(t, {kE4M3Max, 0, false, 4});
  EXPECT_EQ(got.history, std::vector<float>(4, 0.0f));
  EXPECT_TRUE(SameBits(got.scale, scale));
  EXPECT_TRUE(SameBits(got.scale_inv, static_cast<float>(1.0 / scale)));
  // -0 is not > 0 either; neither is a negative amax.
  t.amax = -0.0f;
  EXPECT_TRUE(SameBits(Update(t, {kE4M3Max, 0, true, 1}).scale, scale));
  t.amax = -3.0f;
  EXPECT_TRUE(SameBits(Update(t, {kE4M3Max, 0, true, 1}).scale, scale));
}

TEST_F(Fp8ScaleMathTest, NonFiniteAmaxDoesNotEnterTheHistory) {
  rng_.seed(Seed("NonFiniteAmaxDoesNotEnterTheHistory"));
  std::vector<float> history;
  for (int h = 0; h < 5; ++h) history.push_back(LogUniform(-8, 8));
  const float scale = LogUniform(-5, 5);
  const float max = *std::max_element(history.begin(), history.end());
  for (float amax : {kInf, -kInf, std::nanf(""), -std::nanf("")}) {
    SCOPED_TRACE(::testing::Message() << "amax " << amax);
    const Result got = Update({amax, history, scale}, {kE5M2Max, 0, false, 5});
    EXPECT_EQ(got.history, history);  // untouched, bit for bit (all finite)
    // The scale still follows the (unchanged) history.
    const float want = static_cast<float>(static_cast<double>(kE5M2Max) / max);
    EXPECT_TRUE(SameBits(got.scale, want));
    EXPECT_TRUE(NearReal(got.scale, kE5M2Max, max, 0));
    EXPECT_TRUE(SameBits(got.scale_inv, static_cast<float>(1.0 / want)));
  }
  // A finite amax does enter: rows move down by one, the last falls off.
  const float amax = LogUniform(-8, 8);
  const Result got = Update({amax, history, scale}, {kE5M2Max, 0, false, 5});
  EXPECT_EQ(got.history,
            (std::vector<float>{amax, history[0], history[1], history[2], history[3]}));
}

TEST_F(Fp8ScaleMathTest, MostRecentUsesRowZeroMaxTheLargest) {
  rng_.seed(Seed("MostRecentUsesRowZeroMaxTheLargest"));
  // The new amax is small, an older row is 1000x larger.
  const float amax = LogUniform(-2, 2), big = amax * 1000.0f;
  const std::vector<float> history = {amax * 2.0f, big, amax * 0.5f};
  const float scale = 1.0f;
  const Result recent = Update({amax, history, scale}, {kE4M3Max, 0, true, 3});
  EXPECT_TRUE(SameBits(recent.scale, static_cast<float>(448.0 / amax)));
  EXPECT_TRUE(NearReal(recent.scale, kE4M3Max, amax, 0));
  const Result max = Update({amax, history, scale}, {kE4M3Max, 0, false, 3});
  EXPECT_TRUE(SameBits(max.scale, static_cast<float>(448.0 / big)));
  EXPECT_TRUE(NearReal(max.scale, kE4M3Max, big, 0));
  EXPECT_TRUE(SameBits(max.scale_inv, static_cast<float>(1.0 / max.scale)));
}

TEST_F(Fp8ScaleMathTest, MarginScalesDownByPowersOfTwo) {
  rng_.seed(Seed("MarginScalesDownByPowersOfTwo"));
  const float amax = LogUniform(-10, 10);
  const float q = static_cast<float>(448.0 / amax);
  for (int32_t margin : {0, 1, 2, 3, 7, 30}) {
    const Result got = Update({amax, {0.0f, 0.0f}, 1.0f}, {kE4M3Max, margin, false, 2});
    EXPECT_TRUE(SameBits(got.scale, std::ldexp(q, -margin))) << "margin " << margin;
    EXPECT_TRUE(NearReal(got.scale, kE4M3Max, amax, margin));
  }
  // Into fp32's subnormals: rounded once (not flushed, not rounded twice).
  // 448 / 7 = 64 exactly; 64 * 2^-155 = 2^-149, the smallest subnormal; the
  // quotient 448/3 (inexact) at margin 140 lands among the subnormals.
  EXPECT_TRUE(SameBits(Update({7.0f, {0.0f}, 1.0f}, {kE4M3Max, 155, true, 1}).scale,
                       std::ldexp(1.0f, -149)));
  const float q3 = static_cast<float>(448.0 / 3.0);
  const Result sub = Update({3.0f, {0.0f}, 1.0f}, {kE4M3Max, 140, true, 1});
  EXPECT_TRUE(SameBits(sub.scale, static_cast<float>(std::ldexp(double{q3}, -140))));
  EXPECT_LT(sub.scale, std::numeric_limits<float>::min());
  EXPECT_GT(sub.scale, 0.0f);
  EXPECT_TRUE(SameBits(sub.scale_inv, static_cast<float>(1.0 / sub.scale)));
  // A margin that rounds the scale to 0 keeps the old one (not > 0).
  for (int32_t margin : {157, 200, 299, 300, 1000, std::numeric_limits<int32_t>::max()}) {
    const Result got = Update({7.0f, {0.0f}, 2.5f}, {kE4M3Max, margin, true, 1});
    EXPECT_TRUE(SameBits(got.scale, 2.5f)) << "margin " << margin;
    EXPECT_TRUE(SameBits(got.scale_inv, 0.4f)) << "margin " << margin;
  }
}

TEST_F(Fp8ScaleMathTest, OverflowToInfinityKeepsTheScale) {
  rng_.seed(Seed("OverflowToInfinityKeepsTheScale"));
  const float scale = LogUniform(-5, 5);
  // 448 / 2^-126 = 1.75 * 2^134: past fp32's range. A margin would bring
  // the real value back in range, but the ABI's fp32 quotient is already inf.
  for (int32_t margin : {0, 10}) {
    const Result got = Update({std::ldexp(1.0f, -126), {5.0f}, scale}, {kE4M3Max, margin, true, 1});
    EXPECT_TRUE(SameBits(got.scale, scale)) << "margin " << margin;
    EXPECT_TRUE(SameBits(got.scale_inv, static_cast<float>(1.0 / scale)));
    EXPECT_EQ(got.history[0], std::ldexp(1.0f, -126));  // it is finite: it entered
  }
  // A subnormal amax as well; and just inside the range the scale updates.
  EXPECT_TRUE(SameBits(Update({std::ldexp(1.0f, -140), {0.0f}, scale}, {kE4M3Max, 0, true, 1}).scale,
                       scale));
  const float edge = std::ldexp(1.0f, -119);  // 448 * 2^119 = 1.75 * 2^127 < FLT_MAX
  const Result in_range = Update({edge, {0.0f}, scale}, {kE4M3Max, 0, true, 1});
  EXPECT_TRUE(SameBits(in_range.scale, std::ldexp(448.0f, 119)));
  EXPECT_TRUE(SameBits(in_range.scale_inv, static_cast<float>(1.0 / std::ldexp(448.0, 119))));
}

TEST_F(Fp8ScaleMathTest, HistoryLengthReducesOnlyTheFirstRows) {
  rng_.seed(Seed("HistoryLengthReducesOnlyTheFirstRows"));
  const float amax = LogUniform(-3, 3);
  // After the roll: {amax, h0, h1, h2, h3}; h2 (row 3) is the largest.
  const std::vector<float> history = {amax * 1.5f, amax * 0.25f, amax * 64.0f, amax * 128.0f,
                                      amax * 1e6f};  // the last row falls off
  for (int64_t length = 1; length <= 5; ++length) {
    const Result got = Update({amax, history, 1.0f}, {kE5M2Max, 0, false, length});
    // Rows reduced: {amax, 1.5 amax, 0.25 amax, 64 amax, 128 amax}[0, length).
    const float largest[5] = {amax, amax * 1.5f, amax * 1.5f, amax * 64.0f, amax * 128.0f};
    const float r = largest[length - 1];
    EXPECT_TRUE(SameBits(got.scale, static_cast<float>(57344.0 / r))) << "length " << length;
    EXPECT_TRUE(NearReal(got.scale, kE5M2Max, r, 0)) << "length " << length;
  }
}

TEST_F(Fp8ScaleMathTest, NanInAReducedRowKeepsTheScale) {
  rng_.seed(Seed("NanInAReducedRowKeepsTheScale"));
  const float scale = LogUniform(-5, 5), amax = LogUniform(-3, 3);
  const std::vector<float> history = {1.0f, std::nanf(""), 2.0f};
  // Row 2 after the roll is the NaN: reduced with length 3, not with 2.
  EXPECT_TRUE(SameBits(Update({amax, history, scale}, {kE4M3Max, 0, false, 3}).scale, scale));
  const float r = std::max(amax, 1.0f);
  EXPECT_TRUE(SameBits(Update({amax, history, scale}, {kE4M3Max, 0, false, 2}).scale,
                       static_cast<float>(448.0 / r)));
  // NaN in row 0 (a non-finite amax does not replace it).
  EXPECT_TRUE(SameBits(Update({kInf, {std::nanf(""), 1.0f}, scale}, {kE4M3Max, 0, false, 2}).scale,
                       scale));
  EXPECT_TRUE(SameBits(Update({kInf, {std::nanf(""), 1.0f}, scale}, {kE4M3Max, 0, true, 1}).scale,
                       scale));
}

TEST(Fp8ScaleMathHelpersTest, HistoryMaxLetsNanWin) {
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(Fp8HistoryMax(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(Fp8HistoryMax(1.0f, nan)));
  EXPECT_EQ(Fp8HistoryMax(1.0f, 2.0f), 2.0f);
  EXPECT_EQ(Fp8HistoryMax(2.0f, 1.0f), 2.0f);
  EXPECT_EQ(Fp8HistoryMax(kInf, 1.0f), kInf);
}

}  // namespace
}  // namespace mnt

// The FP8 ops (ABI 1.9) against float64 references written independently of
// common/fp8_convert.h (FP8 values from their bit fields, encoding as the
// nearest finite code by search):
//  - SCALED_CAST, both directions, both formats, every float dtype on the
//    other side: bit-exact (the ABI fixes every bit: the fp32 product, then
//    one saturating round-to-nearest-even), saturation, NaN, amax;
//  - SCALED_GEMM, E4M3xE4M3 / E4M3xE5M2 / E5M2xE4M3, D F32/F16/BF16, every
//    transpose, alpha/beta/bias, amax, sizes 1/7/129: within the fp32
//    accumulation bound (K + 8) * 2^-24 of sum |terms| (plus half an ulp of
//    D's dtype), bit-exact where every partial sum is exact in fp32;
//  - the same bits on 1 and 4 threads;
//  - the contract's refusals (calls/fp8.cc), through the backend.
// NaN never passes: an element expected finite must come out finite and
// equal (or within tolerance); an expected NaN must be a NaN.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {
namespace {

using testing::AllClose;
using testing::BackendFixture;
using testing::HostOperand;
using testing::RunOnFreshBackend;

constexpr MNT_DType kE4M3 = MNT_DTYPE_F8_E4M3;
constexpr MNT_DType kE5M2 = MNT_DTYPE_F8_E5M2;

// ---- float64 references ------------------------------------------------------

// The value of an FP8 code from its fields (NaN for the NaN codes).
double RefDecode(uint8_t code, MNT_DType fmt) {
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (fmt == kE4M3) {
    const int e = (code >> 3) & 0xF, m = code & 7;
    if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
    return sign * (e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7));
  }
  const int e = (code >> 2) & 0x1F, m = code & 3;
  if (e == 31) {
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  }
  return sign * (e == 0 ? std::ldexp(m / 4.0, -14) : std::ldexp(1.0 + m / 4.0, e - 15));
}

bool IsNanCode(uint8_t code, MNT_DType fmt) { return std::isnan(RefDecode(code, fmt)); }

uint8_t MaxCode(MNT_DType fmt) { return fmt == kE4M3 ? 0x7E : 0x7B; }

// Saturating round to nearest even: the nearest finite code (a tie goes to
// the even code, whose mantissa is even), the sign kept; NaN -> 0xFF.
uint8_t RefEncode(double v, MNT_DType fmt) {
  if (std::isnan(v)) return 0xFF;
  const double a = std::fabs(v);
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  // At or past the largest value (infinities too) the nearest is the
  // largest: saturation.
  if (a >= RefDecode(MaxCode(fmt), fmt)) return static_cast<uint8_t>(MaxCode(fmt) | sign);
  int best = 0;
  double best_err = a;
  for (int c = 1; c <= MaxCode(fmt); ++c) {
    const double err = std::fabs(RefDecode(static_cast<uint8_t>(c), fmt) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best | sign);
}

// `v` rounded to nearest even into a float dtype, as double.
double RoundTo(double v, MNT_DType dtype) {
  const float f = static_cast<float>(v);
  if (dtype == MNT_DTYPE_F16) return RoundToHalf(f);
  if (dtype == MNT_DTYPE_BF16) return RoundToBf16(f);
  return f;
}

// Unit roundoff of a float dtype (half an ulp at 1).
double Unit(MNT_DType dtype) {
  return dtype == MNT_DTYPE_F32 ? std::ldexp(1.0, -24)
         : dtype == MNT_DTYPE_BF16 ? std::ldexp(1.0, -8)
                                   : std::ldexp(1.0, -11);
}

// Exact equality, NaN only where NaN is expected.
::testing::AssertionResult SameValues(const std::vector<double>& got,
                                      const std::vector<double>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameCodes(const std::vector<uint8_t>& got,
                                     const std::vector<uint8_t>& want, MNT_DType fmt,
                                     const std::vector<double>& inputs) {
  for (size_t i = 0; i < want.size(); ++i) {
    // Any NaN code stands for NaN (the ABI fixes no NaN sign).
    const bool ok = IsNanCode(want[i], fmt) ? IsNanCode(got[i], fmt) : got[i] == want[i];
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << i << " (x*scale " << inputs[i] << "): got "
             << sdk::Format("0x%02X", got[i]) << " want " << sdk::Format("0x%02X", want[i]);
    }
  }
  return ::testing::AssertionSuccess();
}

double Amax(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, std::fabs(x));
  }
  return m;
}

class Fp8Test : public BackendFixture {
 protected:
  // Random magnitudes spread over 2^lo .. 2^hi (log-uniform), random signs.
  std::vector<double> LogUniform(size_t n, double lo, double hi) {
    std::vector<double> e = Random(n, lo, hi), s = Random(n);
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = std::copysign(std::exp2(e[i]), s[i]);
    return v;
  }
  std::vector<uint8_t> RandomCodes(size_t n, MNT_DType fmt, bool allow_nan) {
    std::vector<uint8_t> c;
    std::uniform_int_distribution<int> byte(0, 255);
    while (c.size() < n) {
      const uint8_t b = static_cast<uint8_t>(byte(rng()));
      if (allow_nan || !IsNanCode(b, fmt)) c.push_back(b);
    }
    return c;
  }
  MNT_Tensor Scalar(float v) { return Upload({v}, MNT_DTYPE_F32, {1}); }

  // Quantizes x (stored as x_dtype) with `scale` and checks every code and
  // the amax against the references.
  void CheckQuantize(const std::vector<double>& values, MNT_DType x_dtype, MNT_DType fmt,
                     float scale) {
    SCOPED_TRACE(::testing::Message() << sdk::DTypeName(x_dtype) << " -> "
                                      << sdk::DTypeName(fmt) << " scale " << scale);
    const int64_t n = static_cast<int64_t>(values.size());
    const std::vector<double> x = Stored(values, x_dtype);
    MNT_Tensor tx = Upload(x, x_dtype, {n});
    MNT_Tensor ty = Empty(fmt, {n});
    MNT_Tensor amax = Scalar(1e30f);  // overwritten, not max-ed into
    const sdk::Status s = Run(MNT_OP_SCALED_CAST, {tx, Scalar(scale)}, {ty, amax});
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<double> product(x.size());
    std::vector<uint8_t> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      // The fp32 product (exact in double, then rounded once to fp32).
      product[i] = static_cast<float>(x[i] * static_cast<double>(scale));
      want[i] = RefEncode(product[i], fmt);
    }
    EXPECT_TRUE(SameCodes(Bytes(ty), want, fmt, product));
    EXPECT_TRUE(SameValues(Download(amax), {Amax(x)}));
  }
};

// ---- SCALED_CAST ---------------------------------------------------------------

TEST_F(Fp8Test, QuantizeEveryDTypeBothFormatsAndScales) {
  for (MNT_DType x_dtype : testing::FloatDTypes()) {
    for (MNT_DType fmt : {kE4M3, kE5M2}) {
      // Magnitudes from far below the smallest subnormal (flushed to zero)
      // to far above the largest finite value (saturated); fp16 stays
      // finite (its infinities are in SaturationAndSpecials).
      const double hi = x_dtype == MNT_DTYPE_F16 ? 15.9 : 20.0;
      const std::vector<double> x = LogUniform(3001, -24.0, hi);
      const float random_scale = static_cast<float>(std::exp2(Random(1, -6.0, 6.0)[0]));
      for (float scale : {1.0f, 0.0078125f, 3.0f, random_scale}) {
        CheckQuantize(x, x_dtype, fmt, scale);
      }
    }
  }
}

TEST_F(Fp8Test, QuantizeSaturatesAndKeepsNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // input, E4M3 code, E5M2 code (scale 1).
  struct Special {
    double x;
    uint8_t e4m3, e5m2;
  };
  const std::vector<Special> specials = {
      {0.0, 0x00, 0x00},
      {-0.0, 0x80, 0x80},
      {448.0, 0x7E, 0x5F},   // E4M3 max; E5M2 448 = 1.75 * 2^8
      {-448.0, 0xFE, 0xDF},
      {464.0, 0x7E, 0x5F},   // E4M3: the tie above max goes to max
      {465.0, 0x7E, 0x5F},   // E4M3: overflow saturates (E5M2: 448 nearest)
      {1e30, 0x7E, 0x7B},    // both saturate
      {inf, 0x7E, 0x7B},     // infinities saturate too
      {-inf, 0xFE, 0xFB},
      {57344.0, 0x7E, 0x7B},  // E5M2 max
      {61440.0, 0x7E, 0x7B},  // E5M2: the overflowing tie saturates
      {std::ldexp(1.0, -9), 0x01, 0x18},   // E4M3 smallest subnormal
      {std::ldexp(1.0, -10), 0x00, 0x14},  // E4M3: half of it ties to 0
      {std::ldexp(3.0, -11), 0x01, 0x16},  // E4M3: 0.75 of it rounds up
      {std::ldexp(1.0, -16), 0x00, 0x01},  // E5M2 smallest subnormal
      {std::ldexp(1.0, -17), 0x00, 0x00},  // E5M2: half of it ties to 0
      {-std::ldexp(1.0, -30), 0x80, 0x80},  // underflow keeps the sign
      {nan, 0x7F, 0x7F},
  };
  std::vector<double> x;
  std::vector<uint8_t> want4, want5;
  for (const Special& s : specials) {
    x.push_back(s.x);
    want4.push_back(s.e4m3);
    want5.push_back(s.e5m2);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  for (MNT_DType fmt : {kE4M3, kE5M2}) {
    SCOPED_TRACE(sdk::DTypeName(fmt));
    // The hand-written codes agree with the search reference.
    for (size_t i = 0; i < x.size(); ++i) {
      const uint8_t want = fmt == kE4M3 ? want4[i] : want5[i];
      ASSERT_TRUE(SameCodes({RefEncode(x[i], fmt)}, {want}, fmt, {x[i]}));
    }
    MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {n});
    MNT_Tensor ty = Empty(fmt, {n});
    MNT_Tensor amax = Scalar(0.0f);
    ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(1.0f)}, {ty, amax}).ok());
    EXPECT_TRUE(SameCodes(Bytes(ty), fmt == kE4M3 ? want4 : want5, fmt, x));
    EXPECT_TRUE(std::isnan(Download(amax)[0])) << "amax with a NaN element must be NaN";
    // Without the NaN the amax is +inf (|x| of the infinities).
    MNT_Tensor tfinite = Upload({1.0, -inf, 3.0}, MNT_DTYPE_F32, {3});
    MNT_Tensor ty3 = Empty(fmt, {3});
    ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tfinite, Scalar(1.0f)}, {ty3, amax}).ok());
    EXPECT_EQ(Download(amax)[0], inf);
  }
}

// The scale multiplies before rounding: 1 * 896 saturates, 300 * 2^-20
// underflows to a subnormal, the amax is of x, not of x * scale.
TEST_F(Fp8Test, ScaleAppliesBeforeRoundingAndAmaxIsUnscaled) {
  const std::vector<double> x = {1.0, -1.0, 300.0, 0.5};
  for (MNT_DType fmt : {kE4M3, kE5M2}) {
    for (float scale : {896.0f, 100000.0f, std::ldexp(1.0f, -20), -2.0f}) {
      CheckQuantize(x, MNT_DTYPE_F32, fmt, scale);
    }
  }
  MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {4});
  MNT_Tensor ty = Empty(kE4M3, {4});
  MNT_Tensor amax = Scalar(-1.0f);
  ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(896.0f)}, {ty, amax}).ok());
  EXPECT_EQ(Bytes(ty), (std::vector<uint8_t>{0x7E, 0xFE, 0x7E, 0x7E}));  // 448, -448, 448, 448
  EXPECT_EQ(Download(amax)[0], 300.0);
}

TEST_F(Fp8Test, AmaxIsWrittenOnlyWhenPresent) {
  const std::vector<double> x = Stored(Random(1000, -8.0, 8.0), MNT_DTYPE_BF16);
  MNT_Tensor tx = Upload(x, MNT_DTYPE_BF16, {10, 100});
  MNT_Tensor with = Empty(kE5M2, {1000}), without = Empty(kE5M2, {1000});
  MNT_Tensor amax = Scalar(1e30f);
  ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(0.75f)}, {with, amax}).ok());
  ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(0.75f)}, {without}).ok());
  EXPECT_EQ(Bytes(with), Bytes(without));
  EXPECT_EQ(Download(amax)[0], Amax(x));
  // An absent amax (data NULL) among the outputs.
  MNT_Tensor absent = amax;
  absent.data = nullptr;
  MNT_Tensor again = Empty(kE5M2, {1000});
  ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(0.75f)}, {again, absent}).ok());
  EXPECT_EQ(Bytes(again), Bytes(with));
  // Empty x: amax is 0.
  MNT_Tensor ex = Upload({}, MNT_DTYPE_F32, {0});
  ex.data = tx.data;  // non-NULL, no element read
  MNT_Tensor ey = Empty(kE4M3, {0});
  ey.data = with.data;
  ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {ex, Scalar(1.0f)}, {ey, amax}).ok());
  EXPECT_EQ(Download(amax)[0], 0.0);
}

TEST_F(Fp8Test, DequantizeEveryCodeToEveryDType) {
  for (MNT_DType fmt : {kE4M3, kE5M2}) {
    std::vector<uint8_t> codes(256);
    for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
    for (uint8_t c : RandomCodes(1000, fmt, true)) codes.push_back(c);
    const int64_t n = static_cast<int64_t>(codes.size());
    const float random_scale = static_cast<float>(std::exp2(Random(1, -12.0, 12.0)[0]));
    for (MNT_DType y_dtype : testing::FloatDTypes()) {
      // 2^10 sends E5M2's large values past fp16's range (to inf).
      for (float scale_inv : {1.0f, 0.125f, 1024.0f, -0.3f, random_scale}) {
        SCOPED_TRACE(::testing::Message() << sdk::DTypeName(fmt) << " -> "
                                          << sdk::DTypeName(y_dtype) << " scale_inv "
                                          << scale_inv);
        MNT_Tensor tx = UploadBytes(codes, fmt, {n});
        MNT_Tensor ty = Empty(y_dtype, {n});
        MNT_Tensor amax = Scalar(-5.0f);
        ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(scale_inv)}, {ty, amax}).ok());
        std::vector<double> want(codes.size());
        for (size_t i = 0; i < codes.size(); ++i) {
          // decode * scale_inv exact in double, rounded to fp32, then to y.
          want[i] = RoundTo(static_cast<float>(RefDecode(codes[i], fmt) *
                                               static_cast<double>(scale_inv)),
                            y_dtype);
        }
        EXPECT_TRUE(SameValues(Download(ty), want));
        EXPECT_TRUE(std::isnan(Download(amax)[0]));  // the NaN codes are there
      }
    }
    // Without NaN codes: amax = max |decode(x)| (E5M2's inf codes included).
    const std::vector<uint8_t> finite = RandomCodes(5000, fmt, false);
    std::vector<double> decoded;
    for (uint8_t c : finite) decoded.push_back(RefDecode(c, fmt));
    MNT_Tensor tx = UploadBytes(finite, fmt, {50, 100});
    MNT_Tensor ty = Empty(MNT_DTYPE_F32, {5000});
    MNT_Tensor amax = Scalar(1e30f);
    ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(2.0f)}, {ty, amax}).ok());
    EXPECT_EQ(Download(amax)[0], Amax(decoded));
  }
}

// Quantize then dequantize with the inverse scale gives the FP8 value.
TEST_F(Fp8Test, RoundTripGivesTheRoundedValue) {
  for (MNT_DType fmt : {kE4M3, kE5M2}) {
    const std::vector<double> x = Stored(Random(4096, -3.0, 3.0), MNT_DTYPE_F32);
    MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {4096});
    MNT_Tensor q = Empty(fmt, {4096});
    MNT_Tensor back = Empty(MNT_DTYPE_F32, {4096});
    ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {tx, Scalar(64.0f)}, {q}).ok());
    ASSERT_TRUE(Run(MNT_OP_SCALED_CAST, {q, Scalar(1.0f / 64.0f)}, {back}).ok());
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = RefDecode(RefEncode(x[i] * 64.0, fmt), fmt) / 64.0;
    EXPECT_TRUE(SameValues(Download(back), want));
  }
}

// ---- SCALED_GEMM ---------------------------------------------------------------

struct GemmCase {
  MNT_DType fa, fb, d;
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  bool bias;
  MNT_DType bias_dtype = MNT_DTYPE_F32;
};

class ScaledGemmTest : public Fp8Test {
 protected:
  // Values for operand `fmt`: within its range, spread over magnitudes.
  std::vector<double> Operand(size_t n, MNT_DType fmt, bool integers) {
    if (integers) {  // -8..8: exact in both formats, products <= 64
      std::uniform_int_distribution<int> d(-8, 8);
      std::vector<double> v(n);
      for (double& e : v) e = d(rng());
      return v;
    }
    return Stored(LogUniform(n, -8.0, fmt == kE4M3 ? 8.5 : 15.5), fmt);
  }

  // Runs one case and checks D and amax. `integers`: every partial sum and
  // the epilogue are exact in fp32, so D must equal the reference exactly.
  void Check(const GemmCase& c, bool integers = false) {
    SCOPED_TRACE(::testing::Message()
                 << sdk::DTypeName(c.fa) << " x " << sdk::DTypeName(c.fb) << " -> "
                 << sdk::DTypeName(c.d) << " ta " << c.trans_a << " tb " << c.trans_b
                 << " m " << c.m << " n " << c.n << " k " << c.k << " alpha " << c.alpha
                 << " beta " << c.beta << " bias " << c.bias << " "
                 << sdk::DTypeName(c.bias_dtype) << (integers ? " integers" : ""));
    const int64_t m = c.m, n = c.n, k = c.k;
    const std::vector<double> a = Operand(m * k, c.fa, integers);
    const std::vector<double> b = Operand(k * n, c.fb, integers);
    // Inverse scales: powers of two for exact cases, else arbitrary fp32.
    const float sa = integers ? 0.5f : static_cast<float>(Random(1, 0.001, 0.01)[0]);
    const float sb = integers ? 0.25f : static_cast<float>(Random(1, 1e-4, 1e-3)[0]);
    std::vector<double> d0(m * n), bias(n);
    {
      std::uniform_int_distribution<int> d(-100, 100);
      for (double& e : d0) e = integers ? d(rng()) : Random(1, -4.0, 4.0)[0];
      for (double& e : bias) e = integers ? d(rng()) : Random(1, -4.0, 4.0)[0];
      d0 = Stored(d0, c.d);
      bias = Stored(bias, c.bias_dtype);
    }
    MNT_Tensor ta = c.trans_a ? Upload(a, c.fa, {k, m}) : Upload(a, c.fa, {m, k});
    MNT_Tensor tb = c.trans_b ? Upload(b, c.fb, {n, k}) : Upload(b, c.fb, {k, n});
    // beta == 0 must not read D: it starts as NaN then.
    MNT_Tensor td = c.beta != 0.0f ? Upload(d0, c.d, {m, n}) : Empty(c.d, {m, n});
    MNT_Tensor amax = Scalar(1e30f);
    MNT_ScaledGemmParams p{MNT_ScaledGemmParams_STRUCT_SIZE, c.trans_a, c.trans_b,
                           c.alpha, c.beta, 0};
    std::vector<MNT_Tensor> in = {ta, tb, Scalar(sa), Scalar(sb)};
    if (c.bias) in.push_back(Upload(bias, c.bias_dtype, {n}));
    const sdk::Status s = Run(MNT_OP_SCALED_GEMM, in, {td, amax}, &p);
    ASSERT_TRUE(s.ok()) << s.message();

    const double scale = static_cast<double>(c.alpha) * sa * sb;
    std::vector<double> want(m * n), err_scale(m * n);
    double want_amax = 0.0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        // a[i, kk] is stored at (trans_a ? kk * m + i : i * k + kk) in both
        // layouts because Upload took the values in storage order.
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double av = c.trans_a ? a[kk * m + i] : a[i * k + kk];
          const double bv = c.trans_b ? b[j * k + kk] : b[kk * n + j];
          sum += av * bv;
          abs_sum += std::fabs(av * bv);
        }
        double v = scale * sum, sc = std::fabs(scale) * abs_sum;
        if (c.beta != 0.0f) {
          v += c.beta * d0[i * n + j];
          sc += std::fabs(c.beta * d0[i * n + j]);
        }
        if (c.bias) {
          v += bias[j];
          sc += std::fabs(bias[j]);
        }
        want_amax = std::max(want_amax, std::fabs(v));
        want[i * n + j] = integers ? RoundTo(v, c.d) : v;
        // fp16's subnormals: an absolute 2^-25 on top of the relative bound.
        err_scale[i * n + j] = sc + (c.d == MNT_DTYPE_F16 ? std::ldexp(1.0, -14) : 1e-30);
      }
    }
    const std::vector<double> got = Download(td), got_amax = Download(amax);
    if (integers) {
      EXPECT_TRUE(SameValues(got, want));
      EXPECT_EQ(got_amax[0], want_amax);
      return;
    }
    // fp32 accumulation of k exact products: |error| <= (k - 1) u sum|p|;
    // the three-factor scale and the epilogue's products and sums add a
    // few u more; D's own rounding adds its unit roundoff of |v| <= scale.
    const double tol = (k + 8) * std::ldexp(1.0, -24) + (c.d == MNT_DTYPE_F32 ? 0.0 : Unit(c.d));
    EXPECT_TRUE(AllClose(got, want, err_scale, tol));
    double amax_scale = 0.0;
    for (double e : err_scale) amax_scale = std::max(amax_scale, e);
    EXPECT_TRUE(AllClose(got_amax, {want_amax}, {amax_scale},
                         (k + 8) * std::ldexp(1.0, -24)));
    if (c.d == MNT_DTYPE_F32) {
      // amax is of the fp32 result itself.
      EXPECT_EQ(got_amax[0], Amax(got));
    }
  }
};

TEST_F(ScaledGemmTest, FormatsDTypesTransposesAndOddSizes) {
  const MNT_DType pairs[3][2] = {{kE4M3, kE4M3}, {kE4M3, kE5M2}, {kE5M2, kE4M3}};
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 7, 7}, {129, 7, 1}, {1, 129, 129},
                              {7, 129, 129}, {129, 1, 7}, {33, 300, 20}, {129, 129, 129}};
  int shape = 0;
  for (const auto& pair : pairs) {
    for (MNT_DType d : testing::FloatDTypes()) {
      for (int t = 0; t < 4; ++t) {
        const auto& sz = sizes[shape++ % 8];
        const MNT_DType bias_dtype = testing::FloatDTypes()[(shape / 3) % 3];
        Check({pair[0], pair[1], d, (t & 1) != 0, (t & 2) != 0, sz[0], sz[1], sz[2],
               t == 3 ? -1.5f : 0.75f, t == 2 ? 0.0f : 0.5f, t != 1, bias_dtype});
      }
    }
  }
}

TEST_F(ScaledGemmTest, ExactSumsAreBitExact) {
  const MNT_DType pairs[3][2] = {{kE4M3, kE4M3}, {kE4M3, kE5M2}, {kE5M2, kE4M3}};
  for (const auto& pair : pairs) {
    for (MNT_DType d : {MNT_DTYPE_F32, MNT_DTYPE_BF16}) {
      for (int t = 0; t < 4; ++t) {
        Check({pair[0], pair[1], d, (t & 1) != 0, (t & 2) != 0, 129, 7 + 64 * t, 129,
               2.0f, t == 2 ? 0.0f : 0.5f, true, MNT_DTYPE_BF16},
              /*integers=*/true);
      }
    }
  }
}

TEST_F(ScaledGemmTest, NaNAndInfinityReachDAndAmax) {
  // Row 1 of A holds E4M3's NaN code: row 1 of D is NaN, the rest finite.
  std::vector<uint8_t> a(3 * 4, 0x38);  // 1.0
  a[1 * 4 + 2] = 0x7F;
  MNT_Tensor ta = UploadBytes(a, kE4M3, {3, 4});
  MNT_Tensor tb = Upload(Random(4 * 5), kE5M2, {4, 5});
  MNT_Tensor td = Empty(MNT_DTYPE_F32, {3, 5});
  MNT_Tensor amax = Scalar(0.0f);
  MNT_ScaledGemmParams p{MNT_ScaledGemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_SCALED_GEMM, {ta, tb, Scalar(1.0f), Scalar(1.0f)}, {td, amax}, &p).ok());
  const std::vector<double> d = Download(td);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      EXPECT_EQ(std::isnan(d[i * 5 + j]), i == 1) << i << "," << j;
    }
  }
  EXPECT_TRUE(std::isnan(Download(amax)[0]));
  // E5M2 +inf in B: its column is +-inf (A is all 1.0), amax is inf.
  std::vector<uint8_t> b(4 * 5, 0x3C);  // 1.0 in E5M2
  b[0 * 5 + 3] = 0x7C;
  a[1 * 4 + 2] = 0x38;
  ta = UploadBytes(a, kE4M3, {3, 4});
  tb = UploadBytes(b, kE5M2, {4, 5});
  ASSERT_TRUE(Run(MNT_OP_SCALED_GEMM, {ta, tb, Scalar(1.0f), Scalar(1.0f)}, {td, amax}, &p).ok());
  const std::vector<double> d2 = Download(td);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      EXPECT_EQ(d2[i * 5 + j], j == 3 ? std::numeric_limits<double>::infinity() : 4.0);
    }
  }
  EXPECT_EQ(Download(amax)[0], std::numeric_limits<double>::infinity());
}

TEST_F(ScaledGemmTest, EmptyInnerDimensionGivesBetaDPlusBias) {
  const std::vector<double> d0 = Stored(Random(3 * 2), MNT_DTYPE_F32);
  MNT_Tensor a = Empty(kE4M3, {3, 0});
  a.data = Upload({1.0}, kE4M3, {1}).data;  // non-NULL, 0 bytes used
  MNT_Tensor b = a;
  b.dims[0] = 0;
  b.dims[1] = 2;
  MNT_Tensor d = Upload(d0, MNT_DTYPE_F32, {3, 2});
  MNT_Tensor bias = Upload({1.0, -2.0}, MNT_DTYPE_F32, {2});
  MNT_ScaledGemmParams p{MNT_ScaledGemmParams_STRUCT_SIZE, 0, 0, 1.0f, 2.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_SCALED_GEMM, {a, b, Scalar(1.0f), Scalar(1.0f), bias}, {d}, &p).ok());
  std::vector<double> want(d0.size());
  for (size_t i = 0; i < want.size(); ++i) {
    // 0 + 2 d0 is exact; adding the bias rounds once in fp32.
    want[i] = 2.0f * static_cast<float>(d0[i]) + (i % 2 ? -2.0f : 1.0f);
  }
  EXPECT_TRUE(SameValues(Download(d), want));
}

// fast_accumulation is accepted and, on the CPU, changes nothing.
TEST_F(ScaledGemmTest, FastAccumulationIsIgnored) {
  MNT_Tensor a = Upload(Random(37 * 61, -100, 100), kE4M3, {37, 61});
  MNT_Tensor b = Upload(Random(61 * 23, -100, 100), kE5M2, {61, 23});
  MNT_Tensor d1 = Empty(MNT_DTYPE_F32, {37, 23}), d2 = Empty(MNT_DTYPE_F32, {37, 23});
  MNT_ScaledGemmParams p{MNT_ScaledGemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_SCALED_GEMM, {a, b, Scalar(0.01f), Scalar(0.01f)}, {d1}, &p).ok());
  p.fast_accumulation = 1;
  ASSERT_TRUE(Run(MNT_OP_SCALED_GEMM, {a, b, Scalar(0.01f), Scalar(0.01f)}, {d2}, &p).ok());
  EXPECT_EQ(Bytes(d1), Bytes(d2));
}

// ---- the same bits on any team ----------------------------------------------------

std::vector<uint8_t> F32Bytes(const std::vector<double>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(v[i]);
    std::memcpy(&b[4 * i], &f, 4);
  }
  return b;
}

TEST_F(Fp8Test, SameBitsOnOneAndFourThreads) {
  // Large enough for several threads (parallel.h: >= 2^16 elements for the
  // cast, 2^17 multiply-adds for the GEMM).
  const int64_t m = 133, n = 300, k = 129;
  const std::vector<uint8_t> a = RandomCodes(m * k, kE4M3, false);
  const std::vector<uint8_t> b = RandomCodes(k * n, kE5M2, false);
  const std::vector<uint8_t> d0 = F32Bytes(Random(m * n));
  MNT_ScaledGemmParams p{MNT_ScaledGemmParams_STRUCT_SIZE, 1, 0, 0.5f, 0.25f, 0};
  const std::vector<HostOperand> gemm_in = {{kE4M3, {k, m}, a},
                                            {kE5M2, {k, n}, b},
                                            {MNT_DTYPE_F32, {1}, F32Bytes({0.01})},
                                            {MNT_DTYPE_F32, {1}, F32Bytes({0.001})},
                                            {MNT_DTYPE_F32, {n}, F32Bytes(Random(n))}};
  const std::vector<HostOperand> gemm_out = {{MNT_DTYPE_F32, {m, n}, d0},
                                             {MNT_DTYPE_F32, {1}, F32Bytes({0.0})}};
  const auto g1 = RunOnFreshBackend("threads=1", MNT_OP_SCALED_GEMM, gemm_in, gemm_out, &p);
  const auto g4 = RunOnFreshBackend("threads=4", MNT_OP_SCALED_GEMM, gemm_in, gemm_out, &p);
  ASSERT_EQ(g1.size(), 2u);
  EXPECT_TRUE(g1 == g4) << "SCALED_GEMM differs between 1 and 4 threads";

  const int64_t count = 100003;
  const std::vector<HostOperand> cast_in = {{MNT_DTYPE_F32, {count}, F32Bytes(Random(count, -500, 500))},
                                            {MNT_DTYPE_F32, {1}, F32Bytes({1.5})}};
  const std::vector<HostOperand> cast_out = {{kE4M3, {count}, std::vector<uint8_t>(count)},
                                             {MNT_DTYPE_F32, {1}, F32Bytes({0.0})}};
  const auto c1 = RunOnFreshBackend("threads=1", MNT_OP_SCALED_CAST, cast_in, cast_out, nullptr);
  const auto c4 = RunOnFreshBackend("threads=4", MNT_OP_SCALED_CAST, cast_in, cast_out, nullptr);
  ASSERT_EQ(c1.size(), 2u);
  EXPECT_TRUE(c1 == c4) << "SCALED_CAST differs between 1 and 4 threads";
}

// ---- the contract's refusals (calls/fp8.cc) -----------------------------------------

TEST_F(Fp8Test, ScaledCastRefusals) {
  MNT_Tensor x = Upload(Random(4), MNT_DTYPE_F32, {4});
  MNT_Tensor y = Empty(kE4M3, {4});
  MNT_Tensor scale = Scalar(1.0f);
  MNT_Tensor two = Upload({1.0, 1.0}, MNT_DTYPE_F32, {2});
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {x, two}, {y}).message(),
            "SCALED_CAST: in[1] scale is f32[2], expected f32[1]");
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {x, Upload({1.0}, MNT_DTYPE_F16, {1})}, {y}).message(),
            "SCALED_CAST: in[1] scale is f16[1], expected f32[1]");
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {x, scale}, {Empty(kE4M3, {5})}).message(),
            "SCALED_CAST: out[0] y is f8_e4m3[5], expected 4 elements (as x)");
  // Neither side FP8, and both sides FP8.
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {x, scale}, {Empty(MNT_DTYPE_BF16, {4})}).message(),
            "SCALED_CAST: in[0] x is f32[4], expected f8_e4m3 or f8_e5m2");
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {y, scale}, {Empty(kE5M2, {4})}).message(),
            "SCALED_CAST: in[0] x is f8_e4m3[4], expected a float dtype (f32, f16 or bf16)");
  // y may not alias x.
  MNT_Tensor alias = y;
  alias.data = x.data;
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {x, scale}, {alias}).message(),
            "SCALED_CAST: out[0] y aliases in[0] x");
  EXPECT_EQ(Run(MNT_OP_SCALED_CAST, {x, scale}, {y, two}).message(),
            "SCALED_CAST: out[1] amax is f32[2], expected f32[1]");
  EXPECT_FALSE(Run(MNT_OP_SCALED_CAST, {x}, {y}).ok());
}

TEST_F(Fp8Test, ScaledGemmRefusals) {
  MNT_Tensor a4 = Upload(Random(4 * 3), kE4M3, {4, 3});
  MNT_Tensor a5 = Upload(Random(4 * 3), kE5M2, {4, 3});
  MNT_Tensor b5 = Upload(Random(3 * 5), kE5M2, {3, 5});
  MNT_Tensor d = Empty(MNT_DTYPE_F32, {4, 5});
  MNT_Tensor one = Scalar(1.0f);
  MNT_ScaledGemmParams p{MNT_ScaledGemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one}, {d}, &p).ok());
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a5, b5, one, one}, {d}, &p).message(),
            "SCALED_GEMM: A and B are both f8_e5m2 (one must be f8_e4m3)");
  MNT_Tensor af = Upload(Random(4 * 3), MNT_DTYPE_F32, {4, 3});
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {af, b5, one, one}, {d}, &p).message(),
            "SCALED_GEMM: in[0] A is f32[4,3], expected f8_e4m3 or f8_e5m2");
  MNT_Tensor two = Upload({1.0, 1.0}, MNT_DTYPE_F32, {2});
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, two, one}, {d}, &p).message(),
            "SCALED_GEMM: in[2] scale_inv_a is f32[2], expected f32[1]");
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, Upload({1.0}, MNT_DTYPE_BF16, {1})}, {d}, &p)
                .message(),
            "SCALED_GEMM: in[3] scale_inv_b is bf16[1], expected f32[1]");
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one}, {Empty(kE4M3, {4, 5})}, &p).message(),
            "SCALED_GEMM: out[0] D is f8_e4m3[4,5], expected a float dtype (f32, f16 or bf16)");
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one}, {Empty(MNT_DTYPE_F32, {4, 4})}, &p)
                .message(),
            "SCALED_GEMM: out[0] D is f32[4,4], expected [M=4, N=5]");
  p.trans_b = 1;
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one}, {d}, &p).message(),
            "SCALED_GEMM: in[1] B is f8_e5m2[3,5], expected [N, K=3]");
  p.trans_b = 0;
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one, Upload(Random(4), MNT_DTYPE_F32, {4})},
                {d}, &p)
                .message(),
            "SCALED_GEMM: in[4] bias is f32[4], expected [N=5]");
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one}, {d, two}, &p).message(),
            "SCALED_GEMM: out[1] amax is f32[2], expected f32[1]");
  EXPECT_EQ(Run(MNT_OP_SCALED_GEMM, {a4, b5, one, one}, {d}, nullptr).message(),
            "SCALED_GEMM: params (MNT_ScaledGemmParams) is NULL");
  EXPECT_FALSE(Run(MNT_OP_SCALED_GEMM, {a4, b5, one}, {d}, &p).ok());
}

}  // namespace
}  // namespace mnt::cpu

// The FP8 GEMM bound of testing/fp8_gemm_bound.h against an emulation of the
// accumulator it assumes (14 significant bits, 32 exact products per step,
// every addend and the sum truncated), on the CPU: fresh random FP8 operands
// quantized as cuda_fp8_test quantizes them, and inputs built to lose the
// most to truncation, for several K, with and without fp32 promotion every
// 128 products (cuBLASLt with fast accumulation off or on). The emulation
// must stay within the bound; and on plain random data it must exceed the
// 1e-5 of sum |a b| cuda_fp8_test used to allow, which no such accumulator
// meets.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/fp8_convert.h"
#include "plugins/backends/cuda/testing/fp8_gemm_bound.h"

namespace mnt::cuda::testing {
namespace {

constexpr int kSignificantBits = kFp8AccumulatorFractionBits + 1;

// x with its bits below 2^last_bit dropped (toward zero).
double TruncateBelow(double x, int last_bit) {
  const double q = std::ldexp(1.0, last_bit);
  return std::trunc(x / q) * q;
}

// Exponent of x's leading bit (x != 0): 2^e <= |x| < 2^(e+1).
int LeadingBit(double x) {
  int e = 0;
  std::frexp(x, &e);
  return e - 1;
}

// One accumulator update: acc + sum(products), every addend truncated at
// the largest one's last kept bit, then the sum to 14 significant bits.
// (Exact in double: the addends are multiples of one power of two.)
double MmaStep(double acc, const double* p, int64_t n) {
  double largest = std::fabs(acc);
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(p[i]));
  if (largest == 0.0) return 0.0;
  const int last = LeadingBit(largest) - (kSignificantBits - 1);
  double sum = TruncateBelow(acc, last);
  for (int64_t i = 0; i < n; ++i) sum += TruncateBelow(p[i], last);
  return sum == 0.0 ? 0.0 : TruncateBelow(sum, LeadingBit(sum) - (kSignificantBits - 1));
}

// The emulated dot product: steps of kFp8MmaK products; with `promote_every`
// > 0 the accumulator is added into an fp32 sum and cleared that often.
double EmulatedDot(const std::vector<double>& products, int64_t promote_every) {
  const int64_t k = static_cast<int64_t>(products.size());
  float promoted = 0.0f;
  double acc = 0.0;
  for (int64_t i = 0; i < k; i += kFp8MmaK) {
    acc = MmaStep(acc, products.data() + i, std::min(kFp8MmaK, k - i));
    const bool chunk_done = promote_every > 0 && ((i + kFp8MmaK) % promote_every == 0);
    if (chunk_done || i + kFp8MmaK >= k) {
      promoted += static_cast<float>(acc);
      acc = 0.0;
    }
  }
  return promoted;
}

struct Errors {
  double worst = 0.0;  // max |emulated - exact| / sum |products|
};

Errors Measure(const std::vector<std::vector<double>>& dots, int64_t promote_every) {
  Errors e;
  for (const auto& p : dots) {
    double exact = 0.0, mag = 0.0;
    for (double v : p) {
      exact += v;  // double: its own error (~K 2^-53) is far below what is measured
      mag += std::fabs(v);
    }
    const double got = EmulatedDot(p, promote_every);
    EXPECT_FALSE(std::isnan(got));
    if (mag > 0.0) e.worst = std::max(e.worst, std::fabs(got - exact) / mag);
  }
  return e;
}

// cuda_fp8_test's operands: N(0, 1) times a scale, quantized to E4M3 (A)
// and E5M2 or E4M3 (B); products of the decoded values.
std::vector<std::vector<double>> RandomDots(std::mt19937& rng, int64_t k, int count, bool e5m2) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<double>> dots(count, std::vector<double>(k));
  for (auto& p : dots) {
    for (auto& v : p) {
      const double a = Fp8E4M3BitsToFloat(FloatToFp8E4M3Bits(normal(rng) * 16.0f));
      const float bq = normal(rng) * 64.0f;
      const double b = e5m2 ? Fp8E5M2BitsToFloat(FloatToFp8E5M2Bits(bq))
                            : Fp8E4M3BitsToFloat(FloatToFp8E4M3Bits(bq));
      v = a * b;
    }
  }
  return dots;
}

// Inputs truncation hurts most: one large product, then same-signed ones
// each just under the accumulator's last kept bit, every one of them
// dropped (and the same with every other one negative and halved).
std::vector<std::vector<double>> SwampingDots(int64_t k) {
  std::vector<double> p(k);
  p[0] = 448.0 * 448.0;  // E4M3's largest squared
  const int last = LeadingBit(p[0]) - (kSignificantBits - 1);
  const double under = std::ldexp(1.0, last) * 0.9375;  // 15/16 of the last bit
  for (int64_t i = 1; i < k; ++i) p[i] = under;
  std::vector<double> alternating = p;
  for (int64_t i = 1; i < k; i += 2) alternating[i] = -under * 0.5;
  return {p, alternating};
}

TEST(Fp8GemmBoundTest, EmulatedAccumulatorStaysWithinTheBound) {
  std::mt19937 rng(std::random_device{}());
  for (int64_t k : {16, 40, 64, 96, 128, 256, 1024}) {
    for (int64_t promote_every : {int64_t{0}, int64_t{128}}) {
      SCOPED_TRACE(::testing::Message() << "K " << k << ", promotion every "
                                        << promote_every << " products (0: never)");
      const double bound = Fp8GemmAccumulationBound(k);
      const Errors random = Measure(RandomDots(rng, k, 200, k % 2 == 0), promote_every);
      const Errors swamped = Measure(SwampingDots(k), promote_every);
      EXPECT_LE(random.worst, bound);
      EXPECT_LE(swamped.worst, bound);
      std::printf("K %4lld promotion %3lld: bound %.2e, emulated worst %.2e random, %.2e "
                  "swamping\n",
                  static_cast<long long>(k), static_cast<long long>(promote_every), bound,
                  random.worst, swamped.worst);
    }
  }
}

TEST(Fp8GemmBoundTest, SwampingReachesAFairShareOfTheBound) {
  // The bound is not vacuous: K - 1 products dropped whole cost about
  // (K - 1) * 15/16 of the last bit, over half the first-order bound.
  for (int64_t k : {64, 128}) {
    const Errors e = Measure(SwampingDots(k), 0);
    EXPECT_GT(e.worst, 0.25 * Fp8GemmAccumulationBound(k)) << "K " << k;
  }
}

TEST(Fp8GemmBoundTest, TheOldToleranceIsBelowWhatSuchAnAccumulatorDoes) {
  std::mt19937 rng(std::random_device{}());
  const Errors e = Measure(RandomDots(rng, 64, 200, false), 128);
  EXPECT_GT(e.worst, 1e-5) << "14 significant bits cannot meet 1e-5 of sum |a b| at K = 64";
  EXPECT_LE(e.worst, Fp8GemmAccumulationBound(64));
}

TEST(Fp8GemmBoundTest, BoundValues) {
  const double u = std::ldexp(1.0, -13);
  EXPECT_NEAR(Fp8GemmAccumulationBound(64), 68 * u / (1 - 68 * u), 1e-15);
  EXPECT_NEAR(Fp8GemmAccumulationBound(40), 44 * u / (1 - 44 * u), 1e-15);
  EXPECT_NEAR(Fp8GemmAccumulationBound(1), 3 * u / (1 - 3 * u), 1e-15);
}

}  // namespace
}  // namespace mnt::cuda::testing

// tensor_stats_math.h (MNT_OP_TENSOR_STATS's per-element step) against a
// float64 reference written from the ABI text: fresh random tensors in
// F32, F16 and BF16 whose elements are drawn from every class (normal
// numbers over the whole exponent range, subnormals, +0 and -0, +-inf,
// NaNs with any payload), decoded here from their bits with std::ldexp, not
// with float_convert.h. Then: any split into pieces merged in any order
// gives the same bits as one pass; the counts saturate at INT32_MAX; the
// corner cases (nothing finite, no elements, only zeros) by hand. The seed
// is printed; MANTISSA_TEST_SEED=<n> replays it.
#include "plugins/backends/common/tensor_stats_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/testing/float_patterns.h"

namespace mnt {
namespace {

using namespace backend::testing;  // float_patterns.h

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint32_t Seed() {
  const char* env = std::getenv("MANTISSA_TEST_SEED");
  const uint32_t seed = env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10))
                                       : std::random_device{}();
  std::printf("[ seed     ] %u (MANTISSA_TEST_SEED=%u replays it)\n", seed, seed);
  return seed;
}

// Random bit patterns of format f: one class per element, uniformly.
std::vector<uint32_t> RandomPatterns(const FloatFormat& f, size_t n, std::mt19937* rng) {
  const uint32_t exp_max = (1u << f.exp_bits) - 1, mant_mask = (1u << f.mant_bits) - 1;
  auto make = [&](uint32_t sign, uint32_t exp, uint32_t mant) {
    return (sign << (f.exp_bits + f.mant_bits)) | (exp << f.mant_bits) | (mant & mant_mask);
  };
  std::vector<uint32_t> out(n);
  for (uint32_t& b : out) {
    const uint32_t sign = (*rng)() & 1u, mant = (*rng)();
    switch ((*rng)() % 8) {
      case 0:  // subnormal (mantissa non-zero)
        b = make(sign, 0, mant | 1u);
        break;
      case 1:  // +0 or -0
        b = make(sign, 0, 0);
        break;
      case 2:  // inf
        b = make(sign, exp_max, 0);
        break;
      case 3:  // NaN, any payload
        b = make(sign, exp_max, mant | 1u);
        break;
      case 4:  // the largest finite numbers
        b = make(sign, exp_max - 1, mant);
        break;
      default:  // any normal number
        b = make(sign, 1 + (*rng)() % (exp_max - 1), mant);
        break;
    }
  }
  return out;
}

struct Want {
  float range[2];
  int64_t nonfinite = 0, nans = 0;
};

// The ABI's definition in double: every finite value of F16/BF16 is an
// fp32 number, so min/max of |x| convert to fp32 exactly.
Want Reference(const FloatFormat& f, const std::vector<uint32_t>& patterns) {
  Want w;
  double lo = std::numeric_limits<double>::infinity(), hi = -1;
  for (uint32_t b : patterns) {
    const double v = DecodeBits(f, b);
    if (!std::isfinite(v)) {
      ++w.nonfinite;
      if (std::isnan(v)) ++w.nans;
      continue;
    }
    lo = std::min(lo, std::fabs(v));
    hi = std::max(hi, std::fabs(v));
  }
  w.range[0] = hi < 0 ? 0.0f : static_cast<float>(lo);
  w.range[1] = hi < 0 ? 0.0f : static_cast<float>(hi);
  return w;
}

TensorStatsPartial Measure(const FloatFormat& f, const std::vector<uint8_t>& bytes, int64_t begin,
                           int64_t end) {
  TensorStatsPartial p = TensorStatsEmpty();
  for (int64_t i = begin; i < end; ++i) {
    TensorStatsAddBits(&p, TensorStatsElementBits(f.dtype, bytes.data(), i));
  }
  return p;
}

::testing::AssertionResult Same(const TensorStatsPartial& p, const Want& w) {
  float range[2];
  int32_t counts[2];
  TensorStatsFinish(p, range, counts);
  for (int k = 0; k < 2; ++k) {
    if (Bits(range[k]) != Bits(w.range[k])) {
      return ::testing::AssertionFailure()
             << "range[" << k << "] = " << range[k] << " (0x" << std::hex << Bits(range[k])
             << "), want " << w.range[k] << " (0x" << Bits(w.range[k]) << ")";
    }
  }
  if (counts[0] != w.nonfinite || counts[1] != w.nans) {
    return ::testing::AssertionFailure() << "counts {" << counts[0] << ", " << counts[1]
                                         << "}, want {" << w.nonfinite << ", " << w.nans << "}";
  }
  return ::testing::AssertionSuccess();
}

TEST(TensorStatsMathTest, RandomTensorsMatchTheReferenceBitForBit) {
  std::mt19937 rng(Seed());
  for (const FloatFormat& f : kFloatFormats) {
    for (int trial = 0; trial < 200; ++trial) {
      const size_t n = 1 + rng() % 300;
      const std::vector<uint32_t> patterns = RandomPatterns(f, n, &rng);
      const std::vector<uint8_t> bytes = StorePatterns(f, patterns);
      ASSERT_TRUE(Same(Measure(f, bytes, 0, n), Reference(f, patterns)))
          << "dtype " << f.dtype << ", " << n << " elements, trial " << trial;
    }
  }
}

TEST(TensorStatsMathTest, AnySplitAndMergeOrderGivesTheSameBits) {
  std::mt19937 rng(Seed());
  for (const FloatFormat& f : kFloatFormats) {
    for (int trial = 0; trial < 100; ++trial) {
      const int64_t n = 1 + rng() % 2000;
      const std::vector<uint32_t> patterns = RandomPatterns(f, n, &rng);
      const std::vector<uint8_t> bytes = StorePatterns(f, patterns);
      std::vector<int64_t> cuts = {0, n};
      for (int k = rng() % 12; k > 0; --k) cuts.push_back(rng() % (n + 1));  // empty pieces too
      std::sort(cuts.begin(), cuts.end());
      std::vector<TensorStatsPartial> parts;
      for (size_t k = 0; k + 1 < cuts.size(); ++k) {
        parts.push_back(Measure(f, bytes, cuts[k], cuts[k + 1]));
      }
      std::shuffle(parts.begin(), parts.end(), rng);
      TensorStatsPartial all = TensorStatsEmpty();
      for (const TensorStatsPartial& p : parts) TensorStatsMerge(&all, p);
      ASSERT_TRUE(Same(all, Reference(f, patterns))) << "dtype " << f.dtype << ", trial " << trial;
    }
  }
}

TEST(TensorStatsMathTest, CornerCases) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm_min = std::numeric_limits<float>::denorm_min();
  auto stats = [](std::vector<float> xs) {
    TensorStatsPartial p = TensorStatsEmpty();
    for (float x : xs) TensorStatsAdd(&p, x);
    return p;
  };
  float r[2];
  int32_t c[2];
  // No elements, or nothing finite: both +0 (not -0, not inf).
  for (const auto& xs : {std::vector<float>{}, std::vector<float>{inf, -inf, nan, -nan}}) {
    TensorStatsFinish(stats(xs), r, c);
    EXPECT_EQ(Bits(r[0]), 0u);
    EXPECT_EQ(Bits(r[1]), 0u);
    EXPECT_EQ(c[0], static_cast<int32_t>(xs.size()));
    EXPECT_EQ(c[1], xs.empty() ? 0 : 2);
  }
  // Only -0: |x| is +0.
  TensorStatsFinish(stats({-0.0f, -0.0f}), r, c);
  EXPECT_EQ(Bits(r[0]), 0u);
  EXPECT_EQ(Bits(r[1]), 0u);
  EXPECT_EQ(c[0], 0);
  // Subnormals are measured, not flushed; the sign never matters.
  TensorStatsFinish(stats({-denorm_min, 3 * denorm_min, -2.5f, nan}), r, c);
  EXPECT_EQ(Bits(r[0]), Bits(denorm_min));
  EXPECT_EQ(r[1], 2.5f);
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[1], 1);
  // The largest finite fp32 is finite; inf is not.
  TensorStatsFinish(stats({std::numeric_limits<float>::max(), -inf}), r, c);
  EXPECT_EQ(r[0], std::numeric_limits<float>::max());
  EXPECT_EQ(r[1], std::numeric_limits<float>::max());
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[1], 0);
}

TEST(TensorStatsMathTest, CountsSaturateAtInt32Max) {
  TensorStatsPartial p = TensorStatsEmpty();
  p.nonfinite = 0x7fffffffull;
  p.nans = 0x7ffffffeull;
  float r[2];
  int32_t c[2];
  TensorStatsFinish(p, r, c);
  EXPECT_EQ(c[0], INT32_MAX);
  EXPECT_EQ(c[1], INT32_MAX - 1);
  TensorStatsPartial q = TensorStatsEmpty();
  TensorStatsAdd(&q, std::numeric_limits<float>::quiet_NaN());
  TensorStatsAdd(&q, std::numeric_limits<float>::quiet_NaN());
  TensorStatsMerge(&p, q);  // 2^31 + 1 and 2^31: past INT32_MAX
  TensorStatsFinish(p, r, c);
  EXPECT_EQ(c[0], INT32_MAX);
  EXPECT_EQ(c[1], INT32_MAX);
  p.nonfinite = p.nans = uint64_t{1} << 40;
  TensorStatsFinish(p, r, c);
  EXPECT_EQ(c[0], INT32_MAX);
  EXPECT_EQ(c[1], INT32_MAX);
}

}  // namespace
}  // namespace mnt

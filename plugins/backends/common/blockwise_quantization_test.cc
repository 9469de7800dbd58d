// The dynamic maps, nearest-code quantization and one block of 8-bit AdamW
// (blockwise_quantization.h, adamw8bit_math.h) against float64 (long
// double) references on fresh random inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/adamw8bit_math.h"
#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/common/step_math.h"

namespace mnt {
namespace {

uint32_t Seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed %u\n", test, seed);
  return seed;
}

std::vector<float> Map(bool is_signed) {
  std::vector<float> map(kQuantizationCodes);
  BuildDynamicMap(is_signed, map.data());
  return map;
}

// The map's positive values as exact rationals, ascending: decade i holds k
// values 10^(i-6) (0.1 + 0.9 (j + 1/2) / k), k = 2^i (signed) or 2^(i+1).
std::vector<long double> ExactPositives(bool is_signed) {
  std::vector<long double> out;
  for (int i = 0; i < 7; ++i) {
    const int k = is_signed ? (1 << i) : (2 << i);
    for (int j = 0; j < k; ++j) {
      out.push_back(std::pow(10.0L, i - 6) * (0.1L + 0.9L * (j + 0.5L) / k));
    }
  }
  return out;
}

TEST(DynamicMapTest, SignedMapIsBitsandbytesLayout) {
  const std::vector<float> map = Map(true);
  const std::vector<long double> pos = ExactPositives(true);
  ASSERT_EQ(pos.size(), 127u);
  EXPECT_EQ(map[kSignedZeroCode], 0.0f);
  EXPECT_EQ(map[255], 1.0f);
  EXPECT_EQ(map[0], -0.99296875f);  // -(1271 / 1280): 1 is not a negative value
  for (int r = 0; r < 127; ++r) {
    // Each value is the exact rational rounded once to fp32.
    EXPECT_EQ(map[128 + r], static_cast<float>(pos[r])) << r;
    EXPECT_EQ(map[126 - r], -static_cast<float>(pos[r])) << r;
  }
  for (int c = 1; c < 256; ++c) ASSERT_LT(map[c - 1], map[c]) << c;
  EXPECT_NEAR(map[128], 0.55e-6, 1e-12);  // decade 0: one value
}

TEST(DynamicMapTest, UnsignedMapUsesTheSignBitAsAFractionBit) {
  const std::vector<float> map = Map(false);
  const std::vector<long double> pos = ExactPositives(false);
  ASSERT_EQ(pos.size(), 254u);
  EXPECT_EQ(map[0], 0.0f);
  EXPECT_EQ(map[255], 1.0f);
  EXPECT_EQ(map[254], 0.996484375f);  // 2551 / 2560
  for (int r = 0; r < 254; ++r) EXPECT_EQ(map[1 + r], static_cast<float>(pos[r])) << r;
  for (int c = 1; c < 256; ++c) ASSERT_LT(map[c - 1], map[c]) << c;
}

// The nearest code by brute force in long double, ties to the lower code,
// with the signed map's sign guard.
int NearestByScan(const std::vector<float>& map, float x, bool is_signed) {
  int best = 0;
  long double best_d = std::numeric_limits<long double>::infinity();
  for (int c = 0; c < 256; ++c) {
    const long double d = std::fabs(static_cast<long double>(x) - map[c]);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (is_signed && std::signbit(x) && map[best] == 0.0f) --best;
  return best;
}

TEST(DynamicMapTest, QuantizeNearestIsTheNearestValue) {
  std::mt19937 rng(Seed("QuantizeNearestIsTheNearestValue"));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_real_distribution<float> log_mag(-9.0f, 0.0f);
  for (bool is_signed : {true, false}) {
    const std::vector<float> map = Map(is_signed);
    std::vector<float> xs;
    for (int i = 0; i < 200000; ++i) {
      float x = i % 2 ? u(rng) : std::pow(10.0f, log_mag(rng)) * (u(rng) < 0 ? -1.0f : 1.0f);
      if (!is_signed) x = std::fabs(x);
      xs.push_back(x);
    }
    // Every midpoint and its neighbours: where a wrong tie rule would show.
    for (int c = 0; c + 1 < 256; ++c) {
      const float mid = (map[c] + map[c + 1]) * 0.5f;
      for (float x : {mid, std::nextafter(mid, -2.0f), std::nextafter(mid, 2.0f), map[c]}) {
        xs.push_back(x);
      }
    }
    xs.push_back(-0.0f);
    xs.push_back(0.0f);
    xs.push_back(1.0f);
    if (is_signed) xs.push_back(-1.0f);
    for (float x : xs) {
      ASSERT_EQ(QuantizeNearest(map.data(), x, is_signed), NearestByScan(map, x, is_signed))
          << "x " << x << (is_signed ? " signed" : " unsigned");
    }
  }
}

TEST(DynamicMapTest, NegativeFirstMomentsKeepTheirSign) {
  const std::vector<float> map = Map(true);
  EXPECT_EQ(QuantizeNearest(map.data(), -1e-9f, true), kSignedZeroCode - 1);
  EXPECT_EQ(QuantizeNearest(map.data(), 1e-9f, true), kSignedZeroCode);
  EXPECT_EQ(QuantizeNearest(map.data(), -1.0f, true), 0);
}

TEST(DynamicMapTest, AbsMaxCombineIsOrderFreeAndKeepsNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(AbsMaxCombine(-3.0f, 2.0f), 3.0f);
  EXPECT_EQ(AbsMaxCombine(2.0f, -3.0f), 3.0f);
  EXPECT_TRUE(std::isnan(AbsMaxCombine(nan, 5.0f)));
  EXPECT_TRUE(std::isnan(AbsMaxCombine(5.0f, nan)));
  EXPECT_TRUE(std::isnan(AbsMaxCombine(AbsMaxCombine(1.0f, nan), 7.0f)));
}

// ---- One block of 8-bit AdamW against long double ------------------------

struct BlockInputs {
  std::vector<float> grad, param, m_absmax_in, v_absmax_in;
  std::vector<uint8_t> m_codes, v_codes;
};

long double NearestValueIndex(const std::vector<float>& map, long double x, bool is_signed) {
  int best = 0;
  long double best_d = std::numeric_limits<long double>::infinity();
  for (int c = 0; c < 256; ++c) {
    const long double d = std::fabs(x - map[c]);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (is_signed && x < 0 && map[best] == 0.0f) --best;
  return best;
}

TEST(AdamW8bitMathTest, OneBlockMatchesFloat64) {
  std::mt19937 rng(Seed("OneBlockMatchesFloat64"));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> code(0, 255), count_dist(1, kQuantizationBlock);
  std::uniform_real_distribution<float> log_mag(-4.0f, 0.0f);
  std::uniform_int_distribution<int64_t> step_dist(1, 5000);
  AdamW8bitMaps maps;
  BuildAdamW8bitMaps(&maps);
  const std::vector<float> mmap(maps.m, maps.m + 256), vmap(maps.v, maps.v + 256);
  int near_ties = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = trial % 3 == 0 ? kQuantizationBlock : count_dist(rng);
    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.1f;
    const int64_t step = step_dist(rng);
    const AdamWCoefficients c = AdamWCoefficientsForStep(lr, beta1, beta2, eps, wd, step);
    std::vector<float> g(n), p(n), p_in(n);
    std::vector<uint8_t> mc(n), vc(n), mc_in(n), vc_in(n);
    float m_absmax = std::pow(10.0f, log_mag(rng)), v_absmax = std::pow(10.0f, 2 * log_mag(rng));
    const float m_absmax_in = m_absmax, v_absmax_in = v_absmax;
    const float gscale = std::pow(10.0f, log_mag(rng));
    for (int i = 0; i < n; ++i) {
      g[i] = u(rng) * gscale;
      p[i] = p_in[i] = u(rng);
      mc[i] = mc_in[i] = static_cast<uint8_t>(code(rng));
      vc[i] = vc_in[i] = static_cast<uint8_t>(code(rng));
    }
    AdamW8bitBlock(c, maps, g.data(), p.data(), mc.data(), &m_absmax, vc.data(), &v_absmax, n);

    // The reference: the stored moments, AdamW in long double, the max and
    // the nearest codes.
    const long double bc1 = 1.0L - std::pow(static_cast<long double>(beta1), step);
    const long double bc2 = 1.0L - std::pow(static_cast<long double>(beta2), step);
    // m_scale: the new first moment's size before the lerp's cancellation.
    // The kernel rounds m0 = map[code] * absmax to fp32, and where beta1 m0
    // and (1 - beta1) g nearly cancel, that rounding (relative to the terms,
    // not to their small sum) is the error of m, of its block's absmax and of
    // the update (upd_scale: the update with m_scale for |m|).
    std::vector<long double> m(n), v(n), pr(n), upd(n), upd_scale(n);
    long double m_max = 0, v_max = 0, m_scale_max = 0;
    for (int i = 0; i < n; ++i) {
      const long double m0 = static_cast<long double>(mmap[mc_in[i]]) * m_absmax_in;
      const long double v0 = static_cast<long double>(vmap[vc_in[i]]) * v_absmax_in;
      m[i] = m0 + (1.0L - beta1) * (g[i] - m0);
      v[i] = beta2 * v0 + (1.0L - beta2) * static_cast<long double>(g[i]) * g[i];
      const long double denom = std::sqrt(v[i]) / std::sqrt(bc2) + eps;
      upd[i] = lr / bc1 * m[i] / denom;
      const long double m_scale = beta1 * std::fabs(m0) + (1.0L - beta1) * std::fabs(g[i]);
      upd_scale[i] = lr / bc1 * m_scale / denom;
      m_scale_max = std::max(m_scale_max, m_scale);
      pr[i] = p_in[i] * (1.0L - static_cast<long double>(lr) * wd) - upd[i];
      m_max = std::max(m_max, std::fabs(m[i]));
      v_max = std::max(v_max, v[i]);
    }
    ASSERT_FALSE(std::isnan(m_absmax) || std::isnan(v_absmax));
    ASSERT_NEAR(m_absmax, static_cast<double>(m_max), 1e-6 * static_cast<double>(m_scale_max));
    ASSERT_NEAR(v_absmax, static_cast<double>(v_max), 1e-6 * static_cast<double>(v_max));
    for (int i = 0; i < n; ++i) {
      ASSERT_FALSE(std::isnan(p[i]));
      ASSERT_NEAR(p[i], static_cast<double>(pr[i]),
                  2e-7 * (std::fabs(p_in[i]) + std::fabs(static_cast<double>(pr[i]))) +
                      1e-5 * static_cast<double>(upd_scale[i]) + 1e-12)
          << "trial " << trial << " element " << i;
      // A code equals the nearest one, or a neighbour where the normalized
      // moment lies within fp32 rounding of the midpoint between them.
      const struct {
        const std::vector<float>& map;
        long double x;
        uint8_t got;
        bool is_signed;
      } moments[] = {{mmap, m[i] / m_max, mc[i], true}, {vmap, v[i] / v_max, vc[i], false}};
      for (const auto& mo : moments) {
        const int want = static_cast<int>(NearestValueIndex(mo.map, mo.x, mo.is_signed));
        if (mo.got == want) continue;
        ASSERT_EQ(std::abs(mo.got - want), 1) << "trial " << trial << " element " << i;
        const int lo = std::min<int>(mo.got, want);
        const long double mid = (static_cast<long double>(mo.map[lo]) + mo.map[lo + 1]) / 2;
        ASSERT_LT(std::fabs(mo.x - mid), 1e-6L) << "trial " << trial << " element " << i;
        ++near_ties;
      }
    }
  }
  std::printf("codes off by one at a midpoint: %d\n", near_ties);
}

TEST(AdamW8bitMathTest, ZeroStateAndGradientStayZero) {
  AdamW8bitMaps maps;
  BuildAdamW8bitMaps(&maps);
  const AdamWCoefficients c = AdamWCoefficientsForStep(1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
  std::vector<float> g(100, 0.0f), p(100, 0.5f);
  std::vector<uint8_t> mc(100, 0), vc(100, 0);  // codes of a zeroed state
  float m_absmax = 0.0f, v_absmax = 0.0f;
  AdamW8bitBlock(c, maps, g.data(), p.data(), mc.data(), &m_absmax, vc.data(), &v_absmax, 100);
  EXPECT_EQ(m_absmax, 0.0f);
  EXPECT_EQ(v_absmax, 0.0f);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(p[i], 0.5f);
    EXPECT_EQ(Dequantize(maps.m, mc[i], m_absmax), 0.0f);
    EXPECT_EQ(Dequantize(maps.v, vc[i], v_absmax), 0.0f);
  }
}

TEST(AdamW8bitMathTest, NanGradientPoisonsItsBlock) {
  AdamW8bitMaps maps;
  BuildAdamW8bitMaps(&maps);
  const AdamWCoefficients c = AdamWCoefficientsForStep(1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
  std::vector<float> g(8, 0.1f), p(8, 0.5f);
  g[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> mc(8, 0), vc(8, 0);
  float m_absmax = 0.0f, v_absmax = 0.0f;
  AdamW8bitBlock(c, maps, g.data(), p.data(), mc.data(), &m_absmax, vc.data(), &v_absmax, 8);
  EXPECT_TRUE(std::isnan(m_absmax));
  EXPECT_TRUE(std::isnan(v_absmax));
  EXPECT_TRUE(std::isnan(p[3]));
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(Dequantize(maps.m, mc[i], m_absmax)));
}

}  // namespace
}  // namespace mnt

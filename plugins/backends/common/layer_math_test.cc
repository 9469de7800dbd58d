// layer_math.h on the CPU: the covering-range inversion against brute force
// over many geometries, argmax tie/NaN rules, and the gradient formulas
// against float64 expressions.
#include "plugins/backends/common/layer_math.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

TEST(LayerMathTest, CoveringRangeMatchesBruteForce) {
  for (int64_t window = 1; window <= 5; ++window) {
    for (int64_t stride = 1; stride <= 4; ++stride) {
      for (int64_t pad = 0; pad < window; ++pad) {
        for (int64_t in = window; in <= 13; ++in) {
          const int64_t outputs = (in + 2 * pad - window) / stride + 1;
          for (int64_t i = 0; i < in; ++i) {
            int64_t first, last;
            PoolCoveringRange(i, window, stride, pad, outputs, &first, &last);
            for (int64_t o = 0; o < outputs; ++o) {
              const int64_t start = o * stride - pad;
              const bool covers = start <= i && i < start + window;
              EXPECT_EQ(covers, o >= first && o <= last)
                  << "window " << window << " stride " << stride << " pad "
                  << pad << " in " << in << " i " << i << " o " << o;
            }
          }
        }
      }
    }
  }
}

TEST(LayerMathTest, WindowClipsToImageAndDivisor) {
  PoolGeometry g{5, 6, 3, 3, 3, 3, 2, 2, 1, 1, 0};
  PoolWindow win = PoolWindowAt(g, 0, 0);
  EXPECT_EQ(win.h0, 0); EXPECT_EQ(win.h1, 2);
  EXPECT_EQ(win.w0, 0); EXPECT_EQ(win.w1, 2);
  EXPECT_EQ(win.divisor, 4);
  g.count_include_pad = 1;
  EXPECT_EQ(PoolWindowAt(g, 0, 0).divisor, 9);
}

TEST(LayerMathTest, ArgMaxFirstMaximumAndNaN) {
  std::vector<float> plane = {1, 3, 3, 0, 3, 2};  // 2 x 3
  const auto load = [&](int64_t i) { return plane[i]; };
  const PoolWindow all{0, 2, 0, 3, 6};
  EXPECT_EQ(PoolArgMax(load, 3, all), 1);  // first of the three 3s
  plane[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(PoolArgMax(load, 3, all), 4);
  plane[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(PoolArgMax(load, 3, all), 0);  // first NaN stays
}

TEST(LayerMathTest, GradientFormulasMatchFloat64) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (int k = 0; k < 1000; ++k) {
    const float dy = dist(rng), x = dist(rng), mean = dist(rng), gamma = dist(rng);
    const float invstd = std::fabs(dist(rng)) + 0.1f;
    const double mdy = dist(rng), mdx = dist(rng);
    const double xhat = (double(x) - mean) * invstd;
    const double want = double(gamma) * invstd * (dy - mdy - xhat * mdx);
    EXPECT_NEAR(BatchNormInputGrad(dy, x, mean, invstd, gamma, mdy, mdx), want,
                1e-5 * (1.0 + std::fabs(want)));
    const float p = std::fabs(dist(rng)) / 4, dv = dist(rng), dyy = dist(rng);
    const double want_ds = double(p) * (double(dv) - dyy);
    EXPECT_NEAR(AttentionScoreGrad(p, dv, dyy), want_ds,
                1e-5 * (1.0 + std::fabs(want_ds)));
  }
}

}  // namespace
}  // namespace mnt

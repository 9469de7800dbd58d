// The fused classifier's per-element math (classifier_math.h), which the
// CUDA kernel runs on the device, checked on the host against float64 on
// fresh random rows: online (max, sum) in any order and split any way
// equals the two-pass softmax; loss and gradient formulas.
// Tolerance: 1e-5 relative (fp32 arithmetic, rows of <= 1000 elements).
#include "plugins/backends/common/classifier_math.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

std::vector<float> RandomRow(std::mt19937& rng, int n, float spread) {
  std::uniform_real_distribution<float> u(-spread, spread);
  std::vector<float> v(n);
  for (float& e : v) e = u(rng);
  return v;
}

TEST(ClassifierMathTest, OnlineStatsMatchTwoPassSoftmax) {
  std::mt19937 rng(std::random_device{}());
  for (int n : {1, 2, 7, 1000}) {
    for (float spread : {1.0f, 30.0f, 200.0f}) {
      const std::vector<float> x = RandomRow(rng, n, spread);
      double max = x[0];
      for (float e : x) max = std::max<double>(max, e);
      double sum = 0.0;
      for (float e : x) sum += std::exp(e - max);
      // Sequential, and split in two halves merged (a tree reduction's step).
      RunningSoftmax seq = SoftmaxStatsEmpty(), lo = SoftmaxStatsEmpty(),
                   hi = SoftmaxStatsEmpty();
      for (int i = 0; i < n; ++i) {
        seq = SoftmaxStatsAdd(seq, x[i]);
        if (i < n / 2) lo = SoftmaxStatsAdd(lo, x[i]);
        else hi = SoftmaxStatsAdd(hi, x[i]);
      }
      const RunningSoftmax merged = SoftmaxStatsMerge(lo, hi);
      for (const RunningSoftmax& s : {seq, merged}) {
        EXPECT_EQ(s.max, static_cast<float>(max));
        EXPECT_NEAR(s.sum, sum, 1e-5 * sum) << n << " " << spread;
      }
      // Merging with an empty part changes nothing (a thread with no
      // elements), in either order.
      const RunningSoftmax e1 = SoftmaxStatsMerge(seq, SoftmaxStatsEmpty());
      const RunningSoftmax e2 = SoftmaxStatsMerge(SoftmaxStatsEmpty(), seq);
      EXPECT_EQ(e1.max, seq.max);
      EXPECT_EQ(e1.sum, seq.sum);
      EXPECT_EQ(e2.max, seq.max);
      EXPECT_EQ(e2.sum, seq.sum);
    }
  }
}

TEST(ClassifierMathTest, LossAndGradientMatchFloat64) {
  std::mt19937 rng(std::random_device{}());
  const int n = 50, target = static_cast<int>(rng() % n);
  const float scale = 0.375f;
  const std::vector<float> x = RandomRow(rng, n, 8.0f);
  RunningSoftmax s = SoftmaxStatsEmpty();
  for (float e : x) s = SoftmaxStatsAdd(s, e);
  double max = x[0], sum = 0.0;
  for (float e : x) max = std::max<double>(max, e);
  for (float e : x) sum += std::exp(e - max);
  const double want_loss = std::log(sum) + max - x[target];
  EXPECT_NEAR(ClassifierLoss(x[target], s.max, logf(s.sum)), want_loss,
              1e-5 * std::fabs(want_loss) + 1e-6);
  double grad_sum = 0.0;
  for (int j = 0; j < n; ++j) {
    const float g = CrossEntropyGradient(x[j], s.max, 1.0f / s.sum, j == target, scale);
    ASSERT_TRUE(std::isfinite(g));
    const double want = (std::exp(x[j] - max) / sum - (j == target)) * scale;
    EXPECT_NEAR(g, want, 1e-5 * scale) << j;
    grad_sum += g;
  }
  EXPECT_NEAR(grad_sum, 0.0, 1e-5);  // softmax sums to 1
}

}  // namespace
}  // namespace mnt

// Every compiled version of vector_loops.h (the AVX2 + FMA and AVX-512 ones only where
// this CPU has it; the test says when it is skipped) against float64: GELU
// and its derivative densely over their whole range, the shifted
// exponential and its sum, the maximum, column sums, layer norm's row
// forward, backward and parameter gradients, the sum of squares; AdamW's
// update bit for bit against the scalar formula; NaN stays NaN; lengths
// that are not a multiple of any vector width.
#include "plugins/backends/cpu/vector_loops.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/step_math.h"

namespace mnt::cpu {
namespace {

std::vector<const VectorLoops*> Versions() {
  std::vector<const VectorLoops*> v = {&BaselineLoops()};
  if (Avx2Loops() != nullptr) {
    v.push_back(Avx2Loops());
  } else {
    std::printf("this CPU has no AVX2/FMA: the AVX2 loops are not tested\n");
  }
  if (Avx512Loops() != nullptr) {
    v.push_back(Avx512Loops());
  } else {
    std::printf("this CPU has no AVX-512: the AVX-512 loops are not tested\n");
  }
  return v;
}

TEST(VectorLoopsTest, TheChosenVersionIsTheBestThisCpuHas) {
  const VectorLoops* best = Avx512Loops() != nullptr ? Avx512Loops()
                            : Avx2Loops() != nullptr ? Avx2Loops()
                                                     : &BaselineLoops();
  EXPECT_EQ(&Loops(), best);
}

// gelu_vector.h's bounds: 1e-5 relative of float64 (backward: of the sum of
// its two terms' magnitudes), 1e-30 absolute where the result underflows.
TEST(VectorLoopsTest, GeluAndItsDerivativeMatchFloat64Densely) {
  std::vector<float> x;
  for (int i = -12 * 1024; i <= 12 * 1024; ++i) x.push_back(i / 1024.0f + 1.0f / 4096);
  x.push_back(std::nanf(""));
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<float> ones(x.size(), 1.0f);
  const double k = std::sqrt(2.0 / M_PI);
  for (const VectorLoops* loops : Versions()) {
    SCOPED_TRACE(loops->isa);
    std::vector<float> y(x.size()), dx(x.size());
    loops->gelu_tanh(x.data(), y.data(), n);
    loops->gelu_tanh_backward(x.data(), ones.data(), dx.data(), n);
    int bad = 0;
    for (int64_t i = 0; i + 1 < n && bad < 5; ++i) {
      const double xi = x[i];
      const double u = k * (xi + 0.044715 * xi * xi * xi);
      const double e = std::exp(-2.0 * u), s = 1.0 / (1.0 + e);
      const double du = k * (1.0 + 3 * 0.044715 * xi * xi);
      const double want_y = xi * s, want_dx = s + 2.0 * xi * s * (e * s) * du;
      const double grad_scale = s + std::fabs(2.0 * xi * s * (e * s) * du);
      if (std::fabs(y[i] - want_y) > 1e-5 * std::fabs(want_y) + 1e-30 ||
          std::fabs(dx[i] - want_dx) > 1e-5 * grad_scale + 1e-30) {
        ++bad;
        ADD_FAILURE() << "x=" << xi << " y=" << y[i] << " want " << want_y << " dx=" << dx[i]
                      << " want " << want_dx;
      }
    }
    EXPECT_TRUE(std::isnan(y.back()));
    EXPECT_TRUE(std::isnan(dx.back()));
    // In place, and dy scales the derivative.
    std::vector<float> dy(x.size(), -3.0f);
    loops->gelu_tanh_backward(x.data(), dy.data(), dy.data(), n);
    for (int64_t i = 0; i + 1 < n; i += 97) EXPECT_FLOAT_EQ(dy[i], -3.0f * dx[i]) << x[i];
  }
}

TEST(VectorLoopsTest, ExpShiftedAndItsSumMatchFloat64) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  for (const VectorLoops* loops : Versions()) {
    SCOPED_TRACE(loops->isa);
    for (int64_t n : {0, 1, 7, 13, 1000, 50257}) {
      std::vector<float> x(n), e(n);
      for (float& v : x) v = dist(rng);
      const float scale = 0.37f, shift = 4.0f;
      const double sum = loops->exp_shifted(x.data(), e.data(), n, scale, shift);
      double want_sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        // The float argument as the loop forms it (FMA or not: within 1 ulp).
        const double want = std::exp(static_cast<double>(scale) * x[i] - shift);
        want_sum += want;
        ASSERT_NEAR(e[i], want, 2e-6 * want) << "n=" << n << " x=" << x[i];
      }
      EXPECT_NEAR(sum, want_sum, 2e-6 * want_sum) << n;
    }
    // Clamped far out, NaN kept; in place.
    std::vector<float> x = {-200.0f, 200.0f, std::nanf(""), 0.0f};
    loops->exp_shifted(x.data(), x.data(), 4, 1.0f, 0.0f);
    EXPECT_LT(x[0], 1e-37f);
    EXPECT_GT(x[1], 1e38f);
    EXPECT_TRUE(std::isnan(x[2]));
    EXPECT_EQ(x[3], 1.0f);
  }
}

TEST(VectorLoopsTest, MaxIsTheLargestElement) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> dist(0.0f, 100.0f);
  for (const VectorLoops* loops : Versions()) {
    SCOPED_TRACE(loops->isa);
    EXPECT_EQ(loops->max(nullptr, 0), -std::numeric_limits<float>::infinity());
    for (int64_t n : {1, 5, 8, 9, 33, 50257}) {
      std::vector<float> x(n);
      for (float& v : x) v = dist(rng);
      const int64_t at = static_cast<int64_t>(rng() % n);
      x[at] = 1e4f;  // somewhere, also in a tail lane
      EXPECT_EQ(loops->max(x.data(), n), 1e4f) << n << " at " << at;
    }
  }
}

TEST(VectorLoopsTest, ColumnSumsAreExactInDouble) {
  for (const VectorLoops* loops : Versions()) {
    SCOPED_TRACE(loops->isa);
    std::vector<float> x = {1e8f, 1.0f, -3.5f, 0.1f, 7.0f};
    std::vector<double> acc = {1.0, 2.0, 3.0, 4.0, 5.0};
    loops->add_to_sums(x.data(), 5, acc.data());
    for (int j = 0; j < 5; ++j) EXPECT_EQ(acc[j], (j + 1.0) + static_cast<double>(x[j]));
  }
}

// Layer norm's row loops against float64 on random rows (c = 1 to 777):
// forward y, mean, rstd; backward dx with and without dsum; the weight and
// bias gradient sums; tolerance 1e-5 of each output's scale.
TEST(VectorLoopsTest, LayerNormRowsMatchFloat64) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> dist(0.5f, 2.0f);
  for (const VectorLoops* loops : Versions()) {
    SCOPED_TRACE(loops->isa);
    for (int64_t c : {1, 3, 64, 77, 777}) {
      SCOPED_TRACE(c);
      std::vector<float> x(c), w(c), b(c), dy(c), dsum(c), y(c), dx(c), dx_sum(c);
      for (auto* v : {&x, &w, &b, &dy, &dsum}) {
        for (float& e : *v) e = dist(rng);
      }
      const float eps = 1e-5f;
      float mean = 0, rstd = 0;
      loops->layer_norm_row(x.data(), c, w.data(), b.data(), eps, y.data(), &mean, &rstd);
      double mu = 0, var = 0;
      for (float e : x) mu += e;
      mu /= c;
      for (float e : x) var += (e - mu) * (e - mu);
      var /= c;
      const double rs = 1.0 / std::sqrt(var + eps);
      EXPECT_NEAR(mean, mu, 1e-6 * (1 + std::fabs(mu)));
      EXPECT_NEAR(rstd, rs, 1e-5 * rs);
      std::vector<double> xh(c);
      double mean_dxhat = 0, mean_dxhat_xhat = 0;
      for (int64_t j = 0; j < c; ++j) {
        xh[j] = (x[j] - mu) * rs;
        EXPECT_NEAR(y[j], xh[j] * w[j] + b[j], 1e-5 * (1 + std::fabs(xh[j] * w[j]) + std::fabs(b[j])));
        mean_dxhat += double(dy[j]) * w[j] / c;
        mean_dxhat_xhat += double(dy[j]) * w[j] * xh[j] / c;
      }
      loops->layer_norm_backward_row(x.data(), dy.data(), w.data(), nullptr, mean, rstd, c,
                                     dx.data());
      dx_sum = dsum;  // dsum aliasing dx, as the fused backward may pass it
      loops->layer_norm_backward_row(x.data(), dy.data(), w.data(), dx_sum.data(), mean, rstd,
                                     c, dx_sum.data());
      std::vector<double> dw(c, 0.5), db(c, -0.5);
      loops->layer_norm_param_grads_row(x.data(), dy.data(), mean, rstd, c, dw.data(),
                                        db.data());
      for (int64_t j = 0; j < c; ++j) {
        const double terms = std::fabs(double(dy[j]) * w[j]) + std::fabs(mean_dxhat) +
                             std::fabs(xh[j] * mean_dxhat_xhat);
        const double want = rs * (double(dy[j]) * w[j] - mean_dxhat - xh[j] * mean_dxhat_xhat);
        EXPECT_NEAR(dx[j], want, 1e-5 * rs * terms) << j;
        EXPECT_NEAR(dx_sum[j], dsum[j] + want, 1e-5 * (std::fabs(dsum[j]) + rs * terms)) << j;
        EXPECT_NEAR(dw[j], 0.5 + dy[j] * xh[j], 1e-5 * (1 + std::fabs(dy[j] * xh[j]))) << j;
        EXPECT_EQ(db[j], -0.5 + double(dy[j])) << j;
      }
    }
  }
}

// A sum of squares in double of floats: each square is exact, so only the
// additions round (n of them, 2^-53 each, on the sum of positive terms).
TEST(VectorLoopsTest, SumSquaresMatchesLongDouble) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t n : {0, 1, 7, 1023, 1024, 4099}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    long double want = 0;
    for (float v : x) want += static_cast<long double>(v) * v;
    for (const VectorLoops* loops : Versions()) {
      SCOPED_TRACE(loops->isa);
      const double got = loops->sum_squares(x.data(), n);
      EXPECT_NEAR(got, static_cast<double>(want), 1e-15 * n * static_cast<double>(want)) << n;
    }
  }
  const float nan[3] = {1.0f, std::nanf(""), 2.0f};
  for (const VectorLoops* loops : Versions()) EXPECT_TRUE(std::isnan(loops->sum_squares(nan, 3)));
}

// The vectorised AdamW must be the scalar formula, bit for bit, in every lane
// and the tail: the CUDA backend and resumed runs rely on those bits.
TEST(VectorLoopsTest, AdamWIsTheScalarUpdateBitForBit) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const AdamWCoefficients c = AdamWCoefficientsForStep(3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 7);
  const int64_t n = 1021;
  std::vector<float> g(n), w(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = normal(rng) * (i % 5 == 0 ? 1e-6f : 1.0f);
    w[i] = normal(rng);
    m[i] = 0.1f * normal(rng);
    v[i] = unit(rng) * unit(rng) * 1e-3f;
  }
  g[3] = std::nanf("");
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
  };
  for (const VectorLoops* loops : Versions()) {
    for (float multiplier : {1.0f, 0.37f}) {
      SCOPED_TRACE(loops->isa);
      SCOPED_TRACE(multiplier);
      std::vector<float> w2 = w, m2 = m, v2 = v;
      loops->adamw(c, g.data(), multiplier, w2.data(), m2.data(), v2.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        float ws = w[i], ms = m[i], vs = v[i];
        AdamWUpdate(c, multiplier != 1.0f ? g[i] * multiplier : g[i], &ws, &ms, &vs);
        if (std::isnan(ws)) {  // NaN in, NaN out (its payload is not promised)
          ASSERT_TRUE(std::isnan(w2[i]) && std::isnan(m2[i]) && std::isnan(v2[i])) << i;
          continue;
        }
        ASSERT_EQ(bits(w2[i]), bits(ws)) << i;
        ASSERT_EQ(bits(m2[i]), bits(ms)) << i;
        ASSERT_EQ(bits(v2[i]), bits(vs)) << i;
      }
      EXPECT_NE(w2[0], w[0]) << "the update ran";
    }
  }
}

}  // namespace
}  // namespace mnt::cpu

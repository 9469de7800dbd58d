// Adafactor's scalars and per-element operations (adafactor_math.h),
// composed in the order the backends use, against a float64 (long double)
// reference of HF transformers.Adafactor's step on fresh random tensors.
#include "plugins/backends/common/adafactor_math.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

uint32_t Seed(const char* test) {
  const uint32_t seed = std::random_device{}();
  std::printf("%s seed %u\n", test, seed);
  return seed;
}

TEST(AdafactorMathTest, PowStepLogAndExpMatchFloat64) {
  std::mt19937 rng(Seed("PowStepLogAndExpMatchFloat64"));
  std::uniform_int_distribution<int64_t> step(2, 100000000);
  std::uniform_real_distribution<double> y(-40.0, 5.0);
  for (int i = 0; i < 20000; ++i) {
    const int64_t t = i < 100 ? i + 1 : step(rng);
    for (double e : {-0.8, -0.5, -1.0, 0.3}) {
      const long double want = std::pow(static_cast<long double>(t), static_cast<long double>(e));
      const double got = PowStep(t, e);
      ASSERT_FALSE(std::isnan(got));
      ASSERT_NEAR(got, static_cast<double>(want), 1e-14 * static_cast<double>(want))
          << t << "^" << e;
    }
    const double x = static_cast<double>(t) * 1.37;
    ASSERT_NEAR(LogAtLeastOne(x), static_cast<double>(std::log(static_cast<long double>(x))),
                1e-14 * std::log(x) + 1e-16);
    const double yy = y(rng);
    const long double ey = std::exp(static_cast<long double>(yy));
    ASSERT_NEAR(ExpRn(yy), static_cast<double>(ey), 1e-14 * static_cast<double>(ey));
  }
  EXPECT_EQ(PowStep(1, -0.8), 1.0);
  EXPECT_EQ(LogAtLeastOne(1.0), 0.0);
  EXPECT_EQ(ExpRn(0.0), 1.0);
}

TEST(AdafactorMathTest, CoefficientsFollowHfDefaults) {
  // Step 1: beta2t = 0, the first second moment is g^2 itself.
  AdafactorCoefficients c = AdafactorCoefficientsForStep(1e-3f, 0.0f, -0.8f, 1e-30f, 1e-3f,
                                                         1.0f, 0.0f, false, false, false, 1);
  EXPECT_EQ(c.beta2t, 0.0f);
  EXPECT_EQ(c.one_minus_beta2t, 1.0f);
  EXPECT_EQ(c.rho, 1e-3f);
  EXPECT_EQ(AdafactorLr(c, 123.0f), 1e-3f);  // no parameter scaling
  for (int64_t t : {2, 10, 1000, 123456}) {
    c = AdafactorCoefficientsForStep(0.0f, 0.0f, -0.8f, 1e-30f, 1e-3f, 1.0f, 0.0f, true, true,
                                     false, t);
    const long double d = std::pow(static_cast<long double>(t), -0.8L);
    EXPECT_NEAR(c.beta2t, static_cast<double>(1.0L - d), 1e-7) << t;
    const double rho = std::min(1e-2, 1.0 / std::sqrt(static_cast<double>(t)));
    EXPECT_NEAR(c.rho, rho, 1e-7 * rho) << t;
    EXPECT_EQ(AdafactorLr(c, 1e-5f), c.rho * 1e-3f);  // RMS below eps2: eps2
    EXPECT_EQ(AdafactorLr(c, 0.5f), c.rho * 0.5f);
    c = AdafactorCoefficientsForStep(0.0f, 0.0f, -0.8f, 1e-30f, 1e-3f, 1.0f, 0.0f, true, false,
                                     true, t);
    const double warm = std::min(1e-6 * t, 1.0 / std::sqrt(static_cast<double>(t)));
    EXPECT_NEAR(c.rho, warm, 1e-7 * warm) << t;
  }
}

struct Options {
  float lr = 1e-2f, beta1 = 0.0f, decay = -0.8f, eps1 = 1e-30f, eps2 = 1e-3f, clip = 1.0f,
        wd = 0.0f;
  bool relative_step = false, scale_parameter = false, warmup_init = false;
};

struct State {
  std::vector<float> p, row_or_v, col, m;
};

// The step as the backends compose it (adafactor_math.h's order).
void StepComposed(const Options& o, int64_t t, const FactoredShape& s, const std::vector<float>& g,
                  State* st) {
  const AdafactorCoefficients c =
      AdafactorCoefficientsForStep(o.lr, o.beta1, o.decay, o.eps1, o.eps2, o.clip, o.wd,
                                   o.relative_step, o.scale_parameter, o.warmup_init, t);
  const int64_t n = s.numel(), R = s.rows, C = s.cols;
  auto total = [&](auto f) {  // LaneOrderedSum of the rows' sums
    return LaneOrderedSum(s.row_count(),
                          [&](int64_t r) { return LaneOrderedSum(C, [&](int64_t j) { return f(r * C + j); }); });
  };
  const float p_rms = RmsFromSum(total([&](int64_t i) {
                                   const double x = st->p[i];
                                   return x * x;
                                 }),
                                 n);
  const float lr_t = AdafactorLr(c, p_rms);
  std::vector<float> row_mean(s.batches);
  if (s.factored) {
    for (int64_t r = 0; r < s.row_count(); ++r) {
      const double sum = LaneOrderedSum(C, [&](int64_t j) { return SquaredGrad(c, g[r * C + j]); });
      st->row_or_v[r] = DecaySecondMoment(c, st->row_or_v[r], MeanOf(sum, C));
    }
    for (int64_t b = 0; b < s.batches; ++b) {
      for (int64_t j = 0; j < C; ++j) {
        double sum = 0.0;
        for (int64_t r = 0; r < R; ++r) sum = AddRn(sum, SquaredGrad(c, g[(b * R + r) * C + j]));
        st->col[b * C + j] = DecaySecondMoment(c, st->col[b * C + j], MeanOf(sum, R));
      }
      row_mean[b] = MeanOf(LaneOrderedSum(R, [&](int64_t r) { return st->row_or_v[b * R + r]; }), R);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      st->row_or_v[i] = DecaySecondMoment(c, st->row_or_v[i], SquaredGrad(c, g[i]));
    }
  }
  auto update = [&](int64_t i) {
    if (!s.factored) return UnfactoredUpdate(g[i], st->row_or_v[i]);
    const int64_t r = i / C, b = r / R;
    return FactoredUpdate(g[i], st->row_or_v[r], row_mean[b], st->col[b * C + i % C]);
  };
  const float u_rms = RmsFromSum(total([&](int64_t i) {
                                   const double u = update(i);
                                   return u * u;
                                 }),
                                 n);
  const float denom = ClipDenominator(c, u_rms);
  for (int64_t i = 0; i < n; ++i) {
    AdafactorApply(c, lr_t, denom, update(i), o.beta1 != 0.0f ? &st->m[i] : nullptr, &st->p[i]);
  }
}

using LD = long double;

// HF transformers.Adafactor.step for one parameter, in long double.
void StepReference(const Options& o, int64_t t, const FactoredShape& s, const std::vector<float>& g,
                   const State& in, std::vector<LD>* p, std::vector<LD>* row_or_v,
                   std::vector<LD>* col, std::vector<LD>* m, std::vector<LD>* u_out) {
  const int64_t n = s.numel(), R = s.rows, C = s.cols;
  const LD beta2t = 1.0L - std::pow(static_cast<LD>(t), static_cast<LD>(o.decay));
  LD rho = o.lr;
  if (o.relative_step) {
    const LD min_step = o.warmup_init ? 1e-6L * t : 1e-2L;
    rho = std::min(min_step, 1.0L / std::sqrt(static_cast<LD>(t)));
  }
  LD sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += static_cast<LD>(in.p[i]) * in.p[i];
  const LD lr_t = o.scale_parameter ? rho * std::max<LD>(o.eps2, std::sqrt(sq / n)) : rho;
  std::vector<LD> u(n);
  auto g2 = [&](int64_t i) { return static_cast<LD>(g[i]) * g[i] + o.eps1; };
  if (s.factored) {
    row_or_v->assign(s.row_count(), 0);
    col->assign(s.col_states(), 0);
    for (int64_t r = 0; r < s.row_count(); ++r) {
      LD sum = 0;
      for (int64_t j = 0; j < C; ++j) sum += g2(r * C + j);
      (*row_or_v)[r] = beta2t * in.row_or_v[r] + (1 - beta2t) * sum / C;
    }
    for (int64_t b = 0; b < s.batches; ++b) {
      for (int64_t j = 0; j < C; ++j) {
        LD sum = 0;
        for (int64_t r = 0; r < R; ++r) sum += g2((b * R + r) * C + j);
        (*col)[b * C + j] = beta2t * in.col[b * C + j] + (1 - beta2t) * sum / R;
      }
      LD rm = 0;
      for (int64_t r = 0; r < R; ++r) rm += (*row_or_v)[b * R + r];
      rm /= R;
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t j = 0; j < C; ++j) {
          const int64_t i = (b * R + r) * C + j;
          u[i] = 1.0L / std::sqrt((*row_or_v)[b * R + r] / rm) / std::sqrt((*col)[b * C + j]) * g[i];
        }
      }
    }
  } else {
    row_or_v->assign(n, 0);
    for (int64_t i = 0; i < n; ++i) {
      (*row_or_v)[i] = beta2t * in.row_or_v[i] + (1 - beta2t) * g2(i);
      u[i] = g[i] / std::sqrt((*row_or_v)[i]);
    }
  }
  LD usq = 0;
  for (LD x : u) usq += x * x;
  const LD denom = std::max<LD>(1.0L, std::sqrt(usq / n) / o.clip);
  p->assign(n, 0);
  m->assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    LD x = u[i] / denom * lr_t;
    if (o.beta1 != 0.0f) {
      (*m)[i] = o.beta1 * static_cast<LD>(in.m[i]) + (1 - static_cast<LD>(o.beta1)) * x;
      x = (*m)[i];
    }
    (*p)[i] = in.p[i] - o.wd * lr_t * in.p[i] - x;
  }
  *u_out = u;
}

void ExpectClose(const char* what, const std::vector<float>& got, const std::vector<LD>& want,
                 double rel, const std::string& context) {
  ASSERT_EQ(got.size(), want.size()) << what << context;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << "[" << i << "] " << context;
    const double w = static_cast<double>(want[i]);
    ASSERT_NEAR(got[i], w, rel * std::fabs(w) + 1e-30) << what << "[" << i << "] " << context;
  }
}

TEST(AdafactorMathTest, StepMatchesFloat64) {
  std::mt19937 rng(Seed("StepMatchesFloat64"));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), pos(0.5f, 2.0f);
  std::uniform_int_distribution<int64_t> step(1, 3000);
  const std::vector<std::vector<int64_t>> shapes = {
      {1}, {37}, {300}, {5, 70}, {64, 3}, {3, 4, 33}, {2, 2, 5, 9}, {1, 1}};
  for (int trial = 0; trial < 400; ++trial) {
    const std::vector<int64_t>& dims = shapes[trial % shapes.size()];
    const FactoredShape s = FactoredShapeOf(dims.data(), static_cast<int>(dims.size()));
    Options o;
    o.beta1 = trial % 2 ? 0.9f : 0.0f;
    o.relative_step = trial % 3 == 0;
    o.scale_parameter = trial % 5 < 2;
    o.warmup_init = o.relative_step && trial % 7 == 0;
    o.wd = trial % 4 == 0 ? 0.01f : 0.0f;
    o.clip = trial % 9 == 0 ? 1e6f : 1.0f;  // clipping on, and effectively off
    const int64_t t = trial % 10 == 0 ? 1 : step(rng);
    const float gscale = std::pow(10.0f, -4.0f * (u(rng) + 1.0f) / 2.0f);
    const int64_t n = s.numel();
    std::vector<float> g(n);
    State st;
    for (int64_t i = 0; i < n; ++i) {
      g[i] = u(rng) * gscale;
      st.p.push_back(u(rng));
      st.m.push_back(u(rng) * 1e-3f);
    }
    const float vscale = gscale * gscale;
    for (int64_t i = 0; i < (s.factored ? s.row_count() : n); ++i) {
      st.row_or_v.push_back(pos(rng) * vscale);
    }
    for (int64_t i = 0; i < (s.factored ? s.col_states() : 0); ++i) {
      st.col.push_back(pos(rng) * vscale);
    }
    const State in = st;
    StepComposed(o, t, s, g, &st);
    std::vector<LD> p, row_or_v, col, m, upd;
    StepReference(o, t, s, g, in, &p, &row_or_v, &col, &m, &upd);
    const std::string context = " trial " + std::to_string(trial) + " step " + std::to_string(t);
    ExpectClose("row_or_v", st.row_or_v, row_or_v, 2e-6, context);
    if (s.factored) ExpectClose("col", st.col, col, 2e-6, context);
    for (int64_t i = 0; i < n && o.beta1 != 0.0f; ++i) {
      ASSERT_FALSE(std::isnan(st.m[i]));
      // m = beta1 m + (1 - beta1) u: relative to its two terms' sizes.
      const double decayed = o.beta1 * static_cast<double>(in.m[i]);
      const double tol = 2e-5 * (std::fabs(decayed) + std::fabs(static_cast<double>(m[i]) - decayed));
      ASSERT_NEAR(st.m[i], static_cast<double>(m[i]), tol + 1e-30) << "m[" << i << "]" << context;
    }
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_FALSE(std::isnan(st.p[i]));
      // The parameter's own roundings, plus the update's (a dozen fp32
      // operations deep, relative to the update's size).
      const double tol = 2e-7 * (std::fabs(in.p[i]) + std::fabs(static_cast<double>(p[i]))) +
                         2e-5 * std::fabs(static_cast<double>(in.p[i] - p[i])) + 1e-30;
      ASSERT_NEAR(st.p[i], static_cast<double>(p[i]), tol) << "p[" << i << "]" << context;
    }
  }
}

TEST(AdafactorMathTest, ZeroGradientGivesNoUpdateAndNoNan) {
  const std::vector<int64_t> dims = {4, 6};
  const FactoredShape s = FactoredShapeOf(dims.data(), 2);
  std::vector<float> g(24, 0.0f);
  State st;
  st.p.assign(24, 0.25f);
  st.row_or_v.assign(4, 0.0f);
  st.col.assign(6, 0.0f);
  st.m.assign(24, 0.0f);
  Options o;
  StepComposed(o, 1, s, g, &st);
  for (float p : st.p) EXPECT_EQ(p, 0.25f);
  for (float r : st.row_or_v) EXPECT_EQ(r, 1e-30f);  // eps1 keeps the factors finite
}

TEST(AdafactorMathTest, LaneOrderedSumIsTheDocumentedOrder) {
  std::vector<double> x(1000);
  std::mt19937 rng(Seed("LaneOrderedSumIsTheDocumentedOrder"));
  std::uniform_real_distribution<double> u(-1e10, 1e10);
  for (double& v : x) v = u(rng);
  double lanes[32] = {};
  for (size_t i = 0; i < x.size(); ++i) lanes[i % 32] += x[i];
  double want = 0;
  for (double l : lanes) want += l;
  EXPECT_EQ(LaneOrderedSum(1000, [&](int64_t i) { return x[i]; }), want);
}

}  // namespace
}  // namespace mnt

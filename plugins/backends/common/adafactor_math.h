// Adafactor (ABI 1.12, ADAFACTOR_STEP; Shazeer & Stern 2018, "Adafactor:
// Adaptive Learning Rates with Sublinear Memory Cost"), with Hugging Face
// transformers.Adafactor's formulas, shared by the CPU backend and the CUDA
// kernels. For a tensor of rank >= 2, viewed as B batches of R x C matrices
// (C its last dim, R the one before, B the product of the rest), the second
// moment is kept factored: a row state [B, R] and a column state [B, C]
// (HF's exp_avg_sq_row / exp_avg_sq_col); a tensor of rank < 2 keeps a full
// second moment (exp_avg_sq). One step, with t the 1-based step:
//
//   beta2t = 1 - t^decay_rate                          (HF: decay_rate -0.8)
//   rho    = relative_step ? min(warmup_init ? 1e-6 t : 1e-2, 1/sqrt(t)) : lr
//   lr_t   = scale_parameter ? rho * max(eps2, RMS(param)) : rho
//   g2     = g * g + eps1                              (eps1 1e-30)
//   factored:   row = beta2t row + (1 - beta2t) mean_c(g2)
//               col = beta2t col + (1 - beta2t) mean_r(g2)      (per batch)
//               u   = rsqrt(row / mean_r(row)) * rsqrt(col) * g
//   unfactored: v   = beta2t v + (1 - beta2t) g2,  u = rsqrt(v) * g
//   u      = u / max(1, RMS(u) / clip_threshold) * lr_t        (clip 1.0)
//   beta1 != 0:  m = beta1 m + (1 - beta1) u,  u = m   (HF: no first moment by default)
//   param  = param + param * (-weight_decay * lr_t) - u
//
// RMS(x) = sqrt(sum x^2 / n). Every per-element operation is one fp32
// operation rounded to nearest (rounded_arith.h; 1/sqrt as a correctly
// rounded sqrt and a division, not an approximate rsqrt). Sums (the means
// and the RMS) are taken in double in one fixed order: a row's sum (and a
// batch's sum of row states) is LaneOrderedSum's, a column's adds its
// batch's rows in row order, a tensor's total (for an RMS) is the
// LaneOrderedSum of its rows' sums (an unfactored tensor is one row),
// and the per-step scalars from t with PowReal's fixed sequence of
// correctly rounded operations, so every backend and thread count gives the
// same bits. Differences from HF: its means and norms are fp32 reductions
// in torch's order and RMS is norm / sqrt(n); here they are double sums
// rounded once (closer to the exact values).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_ADAFACTOR_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_ADAFACTOR_MATH_H_

#include <cmath>
#include <cstdint>

#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/rounded_arith.h"
#include "plugins/sdk/loss_scale_math.h"

namespace mnt {

constexpr double kLn2 = 0.6931471805599453;  // ln 2 rounded to double

// ln x for x >= 1: x = 2^k y with y in [1/sqrt(2), sqrt(2)) (exact halvings),
// ln y = 2 atanh(s), s = (y - 1) / (y + 1), |s| < 0.172, by 14 terms of its
// series (the next is below 1e-21). Relative error a few ulps; the point is
// that it is the same sequence of correctly rounded operations everywhere
// (libm's log and CUDA's differ in their last bits).
MNT_HOST_DEVICE inline double LogAtLeastOne(double x) {
  int k = 0;
  while (x >= 1.4142135623730951) {
    x = MulRn(x, 0.5);
    ++k;
  }
  const double s = DivRn(AddRn(x, -1.0), AddRn(x, 1.0));
  const double s2 = MulRn(s, s);
  double series = DivRn(1.0, 27.0);
  for (int i = 12; i >= 0; --i) {
    series = AddRn(DivRn(1.0, static_cast<double>(2 * i + 1)), MulRn(series, s2));
  }
  return AddRn(MulRn(static_cast<double>(k), kLn2), MulRn(2.0, MulRn(s, series)));
}

// e^y for |y| < 700: y = n ln2 + r with |r| <= ln2 / 2 (n the nearest
// integer), e^r by 21 terms of its Taylor series (Horner), times 2^n by
// exact doublings or halvings.
MNT_HOST_DEVICE inline double ExpRn(double y) {
  const double n = floor(AddRn(DivRn(y, kLn2), 0.5));
  const double r = AddRn(y, -MulRn(n, kLn2));
  double e = 1.0;
  for (int k = 21; k >= 1; --k) e = AddRn(1.0, DivRn(MulRn(r, e), static_cast<double>(k)));
  for (double i = 0; i < n; ++i) e = MulRn(e, 2.0);
  for (double i = 0; i < -n; ++i) e = MulRn(e, 0.5);
  return e;
}

// t^exponent for a step t >= 1 (1 for t = 1, exactly).
MNT_HOST_DEVICE inline double PowStep(int64_t t, double exponent) {
  if (t <= 1) return 1.0;
  return ExpRn(MulRn(exponent, LogAtLeastOne(static_cast<double>(t))));
}

// ---- Per-step scalars ---------------------------------------------------

// What a step's every element uses, from the params and the step.
struct AdafactorCoefficients {
  float beta2t;            // 1 - t^decay_rate
  float one_minus_beta2t;  // t^decay_rate
  float rho;               // the relative step, or the learning rate
  float epsilon1;
  float epsilon2;
  float clip_threshold;
  float beta1;             // 0: no first moment
  float one_minus_beta1;
  float weight_decay;
  bool scale_parameter;
};

MNT_HOST_DEVICE inline AdafactorCoefficients AdafactorCoefficientsForStep(
    float lr, float beta1, float decay_rate, float epsilon1, float epsilon2,
    float clip_threshold, float weight_decay, bool relative_step, bool scale_parameter,
    bool warmup_init, int64_t step) {
  AdafactorCoefficients c;
  const double decayed = PowStep(step, static_cast<double>(decay_rate));
  c.beta2t = static_cast<float>(AddRn(1.0, -decayed));
  c.one_minus_beta2t = static_cast<float>(decayed);
  if (relative_step) {
    const double t = static_cast<double>(step);
    const double min_step = warmup_init ? MulRn(1e-6, t) : 1e-2;
    const double inv_sqrt = DivRn(1.0, SqrtRn(t));
    c.rho = static_cast<float>(min_step < inv_sqrt ? min_step : inv_sqrt);
  } else {
    c.rho = lr;
  }
  c.epsilon1 = epsilon1;
  c.epsilon2 = epsilon2;
  c.clip_threshold = clip_threshold;
  c.beta1 = beta1;
  c.one_minus_beta1 = static_cast<float>(AddRn(1.0, -static_cast<double>(beta1)));
  c.weight_decay = weight_decay;
  c.scale_parameter = scale_parameter;
  return c;
}

// sqrt(sum_squares / n) rounded to fp32 (0 for n = 0).
MNT_HOST_DEVICE inline float RmsFromSum(double sum_squares, int64_t n) {
  if (n <= 0) return 0.0f;
  return static_cast<float>(SqrtRn(DivRn(sum_squares, static_cast<double>(n))));
}

// lr_t from the parameter's RMS before the step (read only with scale_parameter).
MNT_HOST_DEVICE inline float AdafactorLr(const AdafactorCoefficients& c, float param_rms) {
  if (!c.scale_parameter) return c.rho;
  const float scale = param_rms > c.epsilon2 ? param_rms : c.epsilon2;
  return MulF32(c.rho, scale);
}

// ---- Per-element operations ---------------------------------------------

// g^2 + eps1, what the second moment averages.
MNT_HOST_DEVICE inline float SquaredGrad(const AdafactorCoefficients& c, float g) {
  return AddF32(MulF32(g, g), c.epsilon1);
}

// beta2t * state + (1 - beta2t) * mean: a row, column or full second moment.
MNT_HOST_DEVICE inline float DecaySecondMoment(const AdafactorCoefficients& c, float state,
                                               float mean) {
  return AddF32(MulF32(state, c.beta2t), MulF32(c.one_minus_beta2t, mean));
}

MNT_HOST_DEVICE inline float ReciprocalSqrt(float x) { return DivF32(1.0f, SqrtF32(x)); }

// The unclipped update of a factored tensor's element: rsqrt(row /
// row_mean) * rsqrt(col) * g (HF's _approx_sq_grad times the gradient).
MNT_HOST_DEVICE inline float FactoredUpdate(float g, float row, float row_mean, float col) {
  return MulF32(MulF32(ReciprocalSqrt(DivF32(row, row_mean)), ReciprocalSqrt(col)), g);
}

// The unclipped update of an unfactored tensor's element: rsqrt(v) * g.
MNT_HOST_DEVICE inline float UnfactoredUpdate(float g, float v) {
  return MulF32(ReciprocalSqrt(v), g);
}

// max(1, RMS(u) / clip_threshold): what every update is divided by.
MNT_HOST_DEVICE inline float ClipDenominator(const AdafactorCoefficients& c, float update_rms) {
  const float d = DivF32(update_rms, c.clip_threshold);
  return d > 1.0f ? d : 1.0f;
}

// The rest of one element's step: the clipped and scaled update, the first
// moment (when beta1 != 0; `m` may be NULL otherwise), decoupled weight
// decay and the new parameter.
MNT_HOST_DEVICE inline void AdafactorApply(const AdafactorCoefficients& c, float lr_t,
                                           float denominator, float u, float* m, float* param) {
  u = MulF32(DivF32(u, denominator), lr_t);
  if (c.beta1 != 0.0f) {
    *m = AddF32(MulF32(*m, c.beta1), MulF32(u, c.one_minus_beta1));
    u = *m;
  }
  float p = *param;
  if (c.weight_decay != 0.0f) p = AddF32(p, MulF32(p, MulF32(-c.weight_decay, lr_t)));
  *param = SubF32(p, u);
}

// ---- Sums in one fixed order ---------------------------------------------

// Lanes of a row sum: a CUDA warp's width, so a warp adds a row in this order.
constexpr int kSumLanes = 32;

// sum of f(i), i in [0, n), in double: lane l adds elements l, l + 32,
// l + 64, ... in order, then the 32 lane sums are added in lane order. A
// backend may run the lanes in parallel (a warp), never reorder them.
template <typename F>
MNT_HOST_DEVICE inline double LaneOrderedSum(int64_t n, F f) {
  double lanes[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l) lanes[l] = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    lanes[i % kSumLanes] = AddRn(lanes[i % kSumLanes], static_cast<double>(f(i)));
  }
  double total = 0.0;
  for (int l = 0; l < kSumLanes; ++l) total = AddRn(total, lanes[l]);
  return total;
}

// sum / count rounded to fp32: a mean.
MNT_HOST_DEVICE inline float MeanOf(double sum, int64_t count) {
  return static_cast<float>(DivRn(sum, static_cast<double>(count)));
}

// A tensor's view: B batches of R x C (rank >= 2: C the last dim, R the one
// before), or one row of n elements (rank < 2, unfactored).
struct FactoredShape {
  bool factored = false;
  int64_t batches = 1, rows = 1, cols = 1;
  MNT_HOST_DEVICE int64_t numel() const { return batches * rows * cols; }
  MNT_HOST_DEVICE int64_t row_count() const { return batches * rows; }  // rows of cols elements
  MNT_HOST_DEVICE int64_t col_states() const { return batches * cols; }
};

// The view of a tensor with these dims (what ADAFACTOR_STEP's operands
// must match).
MNT_HOST_DEVICE inline FactoredShape FactoredShapeOf(const int64_t* dims, int rank) {
  FactoredShape s;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  if (rank < 2) {
    s.cols = n;
    return s;
  }
  s.factored = true;
  s.cols = dims[rank - 1];
  s.rows = dims[rank - 2];
  for (int i = 0; i < rank - 2; ++i) s.batches *= dims[i];
  return s;
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_ADAFACTOR_MATH_H_

// ADAFACTOR_STEP (ABI 1.12): Adafactor's step on one whole parameter
// (common/adafactor_math.h). Its sums run in the header's fixed order, each
// row's and each column's by one thread, and a tensor's totals on the
// calling thread from the rows' sums, so any thread count gives the same
// bits. Four passes: the rows' (and, with parameter scaling, the weights')
// sums of squares; the column sums; the update's sums of squares; the
// update itself, with the working copy.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/optimizer_steps.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// f(row) for every row of `cols` elements, rows split over threads when
// the tensor is worth it (each row is one thread's).
template <typename F>
void ForRows(int64_t rows, int64_t cols, F f) {
  const int threads = rows > 1 ? ThreadsFor(rows * cols) : 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

// Row r of the gradient as fp32 times the multiplier.
void GradRow(const MNT_Tensor& grad, float multiplier, int64_t r, int64_t cols,
             std::vector<float>* buf) {
  buf->resize(static_cast<size_t>(cols));
  ReadF32Range(grad, r * cols, cols, buf->data());
  if (multiplier == 1.0f) return;
  for (float& g : *buf) g = g * multiplier;
}

}  // namespace

Status CpuBackend::AdafactorStep(const backend::AdafactorStepCall& a) {
  const MNT_AdafactorParams* p = a.params;
  int64_t step = p->step;
  if (a.step_counter.present()) MNT_RETURN_IF_ERROR(NextStep(a, a.step_counter, &step));
  if (SkipStep(a)) return Status::Ok();
  const AdafactorCoefficients c = AdafactorCoefficientsForStep(
      StepLr(a.lr, p->lr), p->beta1, p->decay_rate, p->epsilon1, p->epsilon2,
      p->clip_threshold, p->weight_decay, p->relative_step != 0, p->scale_parameter != 0,
      p->warmup_init != 0, step);
  const FactoredShape& s = a.shape;
  const int64_t rows = s.row_count(), C = s.cols, R = s.rows;
  const float multiplier = a.multiplier.present() ? *a.multiplier.f32() : 1.0f;
  float* w = a.master.f32();
  float* second = a.second_moment.f32();
  float* col = a.col.f32();
  float* m = a.m.f32();
  const MNT_Tensor& grad = *a.grad;

  // Pass 1: each row's mean of g^2 + eps1 (factored) and sum of w^2.
  std::vector<double> row_sq(static_cast<size_t>(rows)), w_sq(static_cast<size_t>(rows));
  ForRows(rows, C, [&](int64_t r) {
    std::vector<float> g;
    GradRow(grad, multiplier, r, C, &g);
    const float* wr = w + r * C;
    if (s.factored) {
      row_sq[r] = LaneOrderedSum(C, [&](int64_t j) { return SquaredGrad(c, g[j]); });
    }
    if (c.scale_parameter) {
      w_sq[r] = LaneOrderedSum(C, [&](int64_t j) {
        const double x = wr[j];
        return x * x;
      });
    }
  });
  const float lr_t = AdafactorLr(
      c, c.scale_parameter ? RmsFromSum(LaneOrderedSum(rows, [&](int64_t r) { return w_sq[r]; }),
                                        a.n)
                           : 0.0f);

  // The second moment, and (factored) each batch's mean row state.
  std::vector<float> row_mean(static_cast<size_t>(s.batches));
  if (s.factored) {
    for (int64_t r = 0; r < rows; ++r) {
      second[r] = DecaySecondMoment(c, second[r], MeanOf(row_sq[r], C));
    }
    // Pass 2: column sums, each column's rows in order by one thread.
    const int64_t chunk = 256;
    const int64_t chunks = (C + chunk - 1) / chunk;
    for (int64_t b = 0; b < s.batches; ++b) {
      const int threads = chunks > 1 ? ThreadsFor(R * C) : 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
      for (int64_t k = 0; k < chunks; ++k) {
        const int64_t c0 = k * chunk, len = std::min(chunk, C - c0);
        double sums[chunk];
        float g[chunk];
        std::fill(sums, sums + len, 0.0);
        for (int64_t r = 0; r < R; ++r) {
          ReadF32Range(grad, (b * R + r) * C + c0, len, g);
          for (int64_t j = 0; j < len; ++j) {
            const float gj = multiplier != 1.0f ? g[j] * multiplier : g[j];
            sums[j] = AddRn(sums[j], SquaredGrad(c, gj));
          }
        }
        for (int64_t j = 0; j < len; ++j) {
          float& state = col[b * C + c0 + j];
          state = DecaySecondMoment(c, state, MeanOf(sums[j], R));
        }
      }
      row_mean[b] = MeanOf(LaneOrderedSum(R, [&](int64_t r) { return second[b * R + r]; }), R);
    }
  }

  // The unclipped update of element j of row r (g: the row's gradient).
  auto update = [&](int64_t r, int64_t j, const float* g) {
    const int64_t i = r * C + j;
    if (!s.factored) return UnfactoredUpdate(g[j], second[i]);
    const int64_t b = r / R;
    return FactoredUpdate(g[j], second[r], row_mean[b], col[b * C + j]);
  };
  // Pass 3: the unfactored second moment, and each row's sum of u^2.
  std::vector<double> u_sq(static_cast<size_t>(rows));
  ForRows(rows, C, [&](int64_t r) {
    std::vector<float> g;
    GradRow(grad, multiplier, r, C, &g);
    if (!s.factored) {
      for (int64_t j = 0; j < C; ++j) {
        second[r * C + j] = DecaySecondMoment(c, second[r * C + j], SquaredGrad(c, g[j]));
      }
    }
    u_sq[r] = LaneOrderedSum(C, [&](int64_t j) {
      const double u = update(r, j, g.data());
      return u * u;
    });
  });
  const float denominator =
      ClipDenominator(c, RmsFromSum(LaneOrderedSum(rows, [&](int64_t r) { return u_sq[r]; }), a.n));

  // Pass 4: the step.
  const CopyRounding rounding = RoundingFor(a.rounding, 0, step);
  ForRows(rows, C, [&](int64_t r) {
    std::vector<float> g;
    GradRow(grad, multiplier, r, C, &g);
    for (int64_t j = 0; j < C; ++j) {
      const int64_t i = r * C + j;
      AdafactorApply(c, lr_t, denominator, update(r, j, g.data()), m != nullptr ? &m[i] : nullptr,
                     &w[i]);
    }
    WriteWorkingBlock(w, a.working, rounding, r * C, C);
  });
  if (a.step_counter.present()) *a.step_counter.i32() += 1;
  return Status::Ok();
}

}  // namespace mnt::cpu

// ADAFACTOR_STEP (ABI 1.12): Adafactor's step on one whole parameter
// (common/adafactor_math.h). Its sums run in the header's fixed order, each
// row's and each column's by one thread, and a tensor's totals on the
// calling thread from the rows' sums, so any thread count gives the same
// bits. Four passes: the rows' (and, with parameter scaling, the weights')
// sums of squares; the column sums; the update's sums of squares; the
// update itself, with the working copy. Since ABI 1.14 also over a table
// of whole parameters (MULTI_ADAFACTOR_STEP), each stepped by the
// single-tensor code.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/step_math.h"
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

namespace {

// One whole parameter's step with coefficients `c`: its shape s and n
// elements, gradient (times `multiplier`), master w, second moment (row
// state or full), column state (factored), first moment (or NULL), working
// copy.
void AdafactorTensor(const AdafactorCoefficients& c, const FactoredShape& s, int64_t n,
                     const MNT_Tensor& grad, float multiplier, float* w, float* second,
                     float* col, float* m, const Operand& working, const CopyRounding& rounding) {
  const int64_t rows = s.row_count(), C = s.cols, R = s.rows;

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
                                        n)
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
      ClipDenominator(c, RmsFromSum(LaneOrderedSum(rows, [&](int64_t r) { return u_sq[r]; }), n));

  // Pass 4: the step.
  ForRows(rows, C, [&](int64_t r) {
    std::vector<float> g;
    GradRow(grad, multiplier, r, C, &g);
    for (int64_t j = 0; j < C; ++j) {
      const int64_t i = r * C + j;
      AdafactorApply(c, lr_t, denominator, update(r, j, g.data()), m != nullptr ? &m[i] : nullptr,
                     &w[i]);
    }
    WriteWorkingBlock(w, working, rounding, r * C, C);
  });
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
  AdafactorTensor(c, a.shape, a.n, *a.grad,
                  a.multiplier.present() ? *a.multiplier.f32() : 1.0f, a.master.f32(),
                  a.second_moment.f32(), a.col.f32(), a.m.f32(), a.working,
                  RoundingFor(a.rounding, 0, step));
  if (a.step_counter.present()) *a.step_counter.i32() += 1;
  return Status::Ok();
}

// ABI 1.14: each table entry by the single-tensor code, so the bits are
// n ADAFACTOR_STEP calls'.
Status CpuBackend::MultiAdafactorStep(const backend::MultiAdafactorStepCall& a) {
  const MNT_MultiAdafactorParams* p = a.params;
  // Every counter is checked before anything is written.
  std::vector<int64_t> steps(a.tensors.size(), p->step);
  for (size_t i = 0; i < a.tensors.size() && a.step_counters; ++i) {
    MNT_RETURN_IF_ERROR(NextStep(a, a.tensors[i].step_counter, &steps[i]));
  }
  if (a.found_inf.present() && *a.found_inf.f32() != 0.0f) return Status::Ok();
  const float multiplier = a.multiplier.present() ? *a.multiplier.f32() : 1.0f;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const backend::MultiAdafactorTensor& t = a.tensors[i];
    const float lr = a.lr.present() ? TableLr(*a.lr.f32(), t.lr_scale) : t.lr;
    const AdafactorCoefficients c = AdafactorCoefficientsForStep(
        lr, p->beta1, p->decay_rate, p->epsilon1, p->epsilon2, p->clip_threshold,
        t.weight_decay, p->relative_step != 0, p->scale_parameter != 0, p->warmup_init != 0,
        steps[i]);
    AdafactorTensor(c, t.shape, t.n, *t.grad, multiplier, t.master.f32(), t.state1.f32(),
                    t.col.f32(), t.m.f32(), t.working, RoundingFor(a.rounding, i, steps[i]));
    if (a.step_counters) *t.step_counter.i32() += 1;
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

// ADAFACTOR_STEP (ABI 1.12): Adafactor's step on one whole parameter
// (common/adafactor_math.h), with the CPU backend's sums in their fixed
// order: a row's sum is one warp's (lane l adds elements l, l + 32, ... in
// double, then the lanes are added in lane order, LaneOrderedSum's order),
// a column's one thread's (rows in order), a tensor's total one warp's over
// the rows' sums. The step is a sequence of kernels on the stream, the
// per-step scalars (from the device step counter and lr, when given)
// derived on the device by one thread, so nothing is read back:
//
//   1. scalars: beta2_t, the relative step            (1 thread)
//   2. row sums of g^2 + eps1 (factored) and of w^2   (a warp per row)
//   3. factored: the row states (a thread per row) and the column states
//      (a thread per column, its sum over the rows in order)
//   4. lr_t from the weights' RMS; factored: each batch's mean row state
//   5. unfactored: the second moment; each row's sum of u^2 (a warp per row)
//   6. the clipping denominator                       (1 warp)
//   7. the update, first moment, decay, weights and working copy
//
// found_inf skips every kernel (each reads it). Since ABI 1.14
// MULTI_ADAFACTOR_STEP runs the same seven phases over a table of whole
// parameters uploaded to the device once (step_table.cuh), each phase one
// launch over every tensor of the table, whatever its storage types (read
// through AnyStorage: the same bits as the specialised loads and stores,
// and one instantiation of each kernel instead of one per pair): a thread
// per tensor for the scalars, a warp per (tensor,
// row) for the row sums, a thread per (tensor, row) and per (tensor,
// column) for the states, a block per tensor for the totals, a warp per
// tensor for the denominator, a thread per (tensor, element) for the
// update, each unit finding its tensor from the table's prefix of first
// rows, columns or elements. Every tensor keeps its own scratch and sums,
// and each phase's per-unit code is the single op's, so the bits are n
// single steps'.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/step_table.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;

// What a step's kernels compute for the later ones (device scratch).
struct Scalars {
  AdafactorCoefficients c;
  int64_t step;
  float lr_t;
  float denominator;
};

// Everything the kernels read and write; device scalars NULL when absent.
struct Step {
  DevTensor grad;
  const float* found_inf = nullptr;
  const float* multiplier = nullptr;
  const float* lr = nullptr;
  float lr_scale = 1.0f;  // a table entry's (1.14): the device lr times it
  int32_t* step_counter = nullptr;
  float* master = nullptr;
  float* second = nullptr;  // row state (factored) or the full second moment
  float* col = nullptr;     // factored only
  float* m = nullptr;       // beta1 != 0 only
  DevTensor working;
  FactoredShape shape;
  // The tensor's params (a table entry's lr and weight decay resolved).
  MNT_AdafactorParams params;
  int32_t stochastic = 0;
  uint64_t rounding_seed = 0;
  int64_t rounding_tensor = 0;
  // Scratch: the scalars, each row's sums (double), each batch's mean row state.
  Scalars* scalars = nullptr;
  double* row_sq = nullptr;
  double* w_sq = nullptr;
  double* u_sq = nullptr;
  float* row_mean = nullptr;
};

__device__ inline bool Skip(const float* found_inf) {
  return found_inf != nullptr && *found_inf != 0.0f;
}

// Element i of the gradient as fp32 times the multiplier (the CPU's order).
template <typename G>
__device__ inline float Grad(const Step& s, int64_t i) {
  const float g = Load<G>(s.grad, i);
  const float mult = s.multiplier != nullptr ? *s.multiplier : 1.0f;
  return mult != 1.0f ? MulF32(g, mult) : g;
}

// LaneOrderedSum(n, f) by one warp: every lane gets the total.
template <typename F>
__device__ inline double WarpLaneOrderedSum(int64_t n, F f) {
  const int lane = threadIdx.x & (kWarp - 1);
  double partial = 0.0;
  for (int64_t i = lane; i < n; i += kWarp) partial = AddRn(partial, static_cast<double>(f(i)));
  double total = 0.0;
  for (int l = 0; l < kWarp; ++l) total = AddRn(total, __shfl_sync(0xffffffffu, partial, l));
  return total;
}

// The unclipped update of element i (the second moment already stepped).
template <typename G>
__device__ inline float Update(const Step& s, int64_t i) {
  const float g = Grad<G>(s, i);
  if (!s.shape.factored) return UnfactoredUpdate(g, s.second[i]);
  const int64_t C = s.shape.cols, r = i / C, b = r / s.shape.rows;
  return FactoredUpdate(g, s.second[r], s.row_mean[b], s.col[b * C + i % C]);
}

// ---- Each phase's work for one tensor's unit, shared by both ops --------

// 1. The per-step scalars, from the device counter and lr when given (one
// thread).
__device__ inline void StepScalars(const Step& s) {
  const MNT_AdafactorParams& p = s.params;
  const int64_t step = s.step_counter != nullptr ? int64_t{*s.step_counter} + 1 : p.step;
  s.scalars->step = step;
  s.scalars->c = AdafactorCoefficientsForStep(
      s.lr != nullptr ? TableLr(*s.lr, s.lr_scale) : p.lr, p.beta1, p.decay_rate, p.epsilon1,
      p.epsilon2, p.clip_threshold, p.weight_decay, p.relative_step != 0,
      p.scale_parameter != 0, p.warmup_init != 0, step);
}

// 2. Row r's sum of g^2 + eps1 (factored) and of w^2 (parameter scaling),
// by one warp.
template <typename G>
__device__ inline void RowSums(const Step& s, int64_t r) {
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t C = s.shape.cols;
  if (s.shape.factored) {
    const double g2 =
        WarpLaneOrderedSum(C, [&](int64_t j) { return SquaredGrad(c, Grad<G>(s, r * C + j)); });
    if ((threadIdx.x & (kWarp - 1)) == 0) s.row_sq[r] = g2;
  }
  if (c.scale_parameter) {
    const double w2 = WarpLaneOrderedSum(C, [&](int64_t j) {
      const double w = s.master[r * C + j];
      return MulRn(w, w);
    });
    if ((threadIdx.x & (kWarp - 1)) == 0) s.w_sq[r] = w2;
  }
}

// 3a. Factored: row r's state (one thread).
__device__ inline void RowState(const Step& s, int64_t r) {
  s.second[r] = DecaySecondMoment(s.scalars->c, s.second[r], MeanOf(s.row_sq[r], s.shape.cols));
}

// 3b. Factored: column state k = (batch, column) (one thread).
template <typename G>
__device__ inline void ColState(const Step& s, int64_t k) {
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t R = s.shape.rows, C = s.shape.cols;
  const int64_t b = k / C, j = k % C;
  double sum = 0.0;
  for (int64_t r = 0; r < R; ++r) sum = AddRn(sum, SquaredGrad(c, Grad<G>(s, (b * R + r) * C + j)));
  s.col[k] = DecaySecondMoment(c, s.col[k], MeanOf(sum, R));
}

// 4. lr_t (warp 0) and each batch's mean row state (a warp per batch): the
// block's warps.
__device__ inline void Totals(const Step& s) {
  const AdafactorCoefficients c = s.scalars->c;
  const int warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  if (warp == 0) {
    const float rms =
        c.scale_parameter
            ? RmsFromSum(WarpLaneOrderedSum(s.shape.row_count(), [&](int64_t r) { return s.w_sq[r]; }),
                         s.shape.numel())
            : 0.0f;
    if (threadIdx.x == 0) s.scalars->lr_t = AdafactorLr(c, rms);
  }
  if (!s.shape.factored) return;
  const int64_t R = s.shape.rows;
  for (int64_t b = warp; b < s.shape.batches; b += warps) {
    const double sum = WarpLaneOrderedSum(R, [&](int64_t r) { return s.second[b * R + r]; });
    if ((threadIdx.x & (kWarp - 1)) == 0) s.row_mean[b] = MeanOf(sum, R);
  }
}

// 5. Unfactored: row r's second moment; row r's sum of u^2 (one warp).
template <typename G>
__device__ inline void UpdateSums(const Step& s, int64_t r) {
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t C = s.shape.cols;
  const double u2 = WarpLaneOrderedSum(C, [&](int64_t j) {
    const int64_t i = r * C + j;
    if (!s.shape.factored) {
      s.second[i] = DecaySecondMoment(c, s.second[i], SquaredGrad(c, Grad<G>(s, i)));
    }
    const double u = Update<G>(s, i);
    return MulRn(u, u);
  });
  if ((threadIdx.x & (kWarp - 1)) == 0) s.u_sq[r] = u2;
}

// 6. The clipping denominator (one warp).
__device__ inline void Denominator(const Step& s) {
  const double sum =
      WarpLaneOrderedSum(s.shape.row_count(), [&](int64_t r) { return s.u_sq[r]; });
  if ((threadIdx.x & (kWarp - 1)) == 0) {
    s.scalars->denominator = ClipDenominator(s.scalars->c, RmsFromSum(sum, s.shape.numel()));
  }
}

// 7. What the step of every element of a tensor reads once.
struct ApplyScalars {
  AdafactorCoefficients c;
  float lr_t, denominator;
  uint64_t key;
};
__device__ inline ApplyScalars ApplyScalarsOf(const Step& s) {
  return {s.scalars->c, s.scalars->lr_t, s.scalars->denominator,
          s.stochastic != 0 ? StochasticRoundingKey(s.rounding_seed, s.scalars->step,
                                                    s.rounding_tensor)
                            : 0};
}
// The step of element i and its working copy.
template <typename G, typename W>
__device__ inline void Apply(const Step& s, const ApplyScalars& a, int64_t i) {
  float w = s.master[i];
  AdafactorApply(a.c, a.lr_t, a.denominator, Update<G>(s, i), s.m != nullptr ? &s.m[i] : nullptr,
                 &w);
  s.master[i] = w;
  if (s.working.data == nullptr) return;
  if (s.stochastic != 0) {
    static_cast<uint16_t*>(s.working.data)[i] = FloatToBf16BitsStochastic(w, a.key, i);
  } else {
    Store<W>(s.working, i, w);
  }
}

// ---- ADAFACTOR_STEP: one tensor --------------------------------------------

__global__ void ScalarsKernel(Step s) {
  if (!Skip(s.found_inf)) StepScalars(s);
}

template <typename G>
__global__ void RowSumsKernel(Step s) {
  if (Skip(s.found_inf)) return;
  const int64_t rows = s.shape.row_count();
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; r < rows;
       r += warps) {
    RowSums<G>(s, r);
  }
}

__global__ void RowStatesKernel(Step s) {
  if (Skip(s.found_inf)) return;
  const int64_t rows = s.shape.row_count();
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    RowState(s, r);
  }
}

template <typename G>
__global__ void ColStatesKernel(Step s) {
  if (Skip(s.found_inf)) return;
  const int64_t cols = s.shape.col_states();
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < cols;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    ColState<G>(s, k);
  }
}

__global__ void TotalsKernel(Step s) {
  if (!Skip(s.found_inf)) Totals(s);
}

template <typename G>
__global__ void UpdateSumsKernel(Step s) {
  if (Skip(s.found_inf)) return;
  const int64_t rows = s.shape.row_count();
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; r < rows;
       r += warps) {
    UpdateSums<G>(s, r);
  }
}

__global__ void DenominatorKernel(Step s) {
  if (!Skip(s.found_inf)) Denominator(s);
}

template <typename G, typename W>
__global__ void ApplyKernel(Step s) {
  if (Skip(s.found_inf)) return;
  const ApplyScalars a = ApplyScalarsOf(s);
  const int64_t n = s.shape.numel();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Apply<G, W>(s, a, i);
  }
}

__global__ void CountAppliedAdafactorStepKernel(int32_t* counter, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *counter += 1;
}

// Bytes of scratch, 8-byte aligned pieces: the scalars, three row arrays of
// doubles, the batches' means (rounded up to 8 bytes, so tables can put
// one tensor's after another's).
size_t ScratchBytes(const FactoredShape& s) {
  const size_t rows = static_cast<size_t>(s.row_count());
  return ((sizeof(Scalars) + 7) / 8) * 8 + 3 * rows * sizeof(double) +
         ((static_cast<size_t>(s.batches) * sizeof(float) + 7) / 8) * 8;
}

// Points s's scratch into `base` (ScratchBytes(s.shape) of them).
void PlaceScratch(char* base, Step* s) {
  const int64_t rows = s->shape.row_count();
  s->scalars = reinterpret_cast<Scalars*>(base);
  base += ((sizeof(Scalars) + 7) / 8) * 8;
  s->row_sq = reinterpret_cast<double*>(base);
  s->w_sq = s->row_sq + rows;
  s->u_sq = s->w_sq + rows;
  s->row_mean = reinterpret_cast<float*>(s->u_sq + rows);
}

// ---- MULTI_ADAFACTOR_STEP: a table of tensors (1.14) -----------------------

// One tensor of the table: its Step (found_inf and the multiplier the
// call's), and its first row, column state and element in the table
// (first_block: the elements'); a tensor without elements has no units.
struct AdafactorEntry {
  Step s;
  int64_t first_row = 0, first_col = 0, first_block = 0;
};

// The prefixes the per-unit kernels find a unit's entry by.
struct FirstRow {
  __device__ int64_t operator()(const AdafactorEntry& e) const { return e.first_row; }
};
struct FirstCol {
  __device__ int64_t operator()(const AdafactorEntry& e) const { return e.first_col; }
};
struct FirstElement {
  __device__ int64_t operator()(const AdafactorEntry& e) const { return e.first_block; }
};

__global__ void MultiScalarsKernel(const AdafactorEntry* table, int64_t count,
                                   const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    StepScalars(table[e].s);
  }
}

__global__ void MultiRowSumsKernel(const AdafactorEntry* table, int64_t count, int64_t rows,
                                   const float* found_inf) {
  if (Skip(found_inf)) return;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t u = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; u < rows;
       u += warps) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstRow{});
    RowSums<AnyStorage>(e.s, u - e.first_row);
  }
}

__global__ void MultiRowStatesKernel(const AdafactorEntry* table, int64_t count, int64_t rows,
                                     const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < rows;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstRow{});
    if (e.s.shape.factored) RowState(e.s, u - e.first_row);
  }
}

__global__ void MultiColStatesKernel(const AdafactorEntry* table, int64_t count, int64_t cols,
                                     const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < cols;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstCol{});
    ColState<AnyStorage>(e.s, u - e.first_col);
  }
}

__global__ void MultiTotalsKernel(const AdafactorEntry* table, int64_t count,
                                  const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t e = blockIdx.x; e < count; e += gridDim.x) Totals(table[e].s);
}

__global__ void MultiUpdateSumsKernel(const AdafactorEntry* table, int64_t count, int64_t rows,
                                      const float* found_inf) {
  if (Skip(found_inf)) return;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t u = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; u < rows;
       u += warps) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstRow{});
    UpdateSums<AnyStorage>(e.s, u - e.first_row);
  }
}

__global__ void MultiDenominatorKernel(const AdafactorEntry* table, int64_t count,
                                       const float* found_inf) {
  if (Skip(found_inf)) return;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t e = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; e < count;
       e += warps) {
    Denominator(table[e].s);
  }
}

// A thread's consecutive elements mostly share a tensor: its scalars are
// read again only when the element's tensor changes.
__global__ void MultiApplyKernel(const AdafactorEntry* table, int64_t count, int64_t elements,
                                 const float* found_inf) {
  if (Skip(found_inf)) return;
  int64_t at = -1, begin = 0, end = 0;
  ApplyScalars a{};
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < elements;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (at < 0 || u < begin || u >= end) {
      at = EntryIndexOfUnit(table, count, u, FirstElement{});
      begin = table[at].first_block;
      end = begin + table[at].s.shape.numel();
      a = ApplyScalarsOf(table[at].s);
    }
    Apply<AnyStorage, AnyStorage>(table[at].s, a, u - begin);
  }
}

__global__ void MultiCountAppliedAdafactorStepsKernel(const AdafactorEntry* table,
                                                      int64_t count, const float* found_inf) {
  if (Skip(found_inf)) return;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count && table[i].s.step_counter != nullptr) *table[i].s.step_counter += 1;
}

// The table's units: rows, factored tensors' column states, elements.
struct TableUnits {
  int64_t rows = 0, cols = 0, elements = 0;
};

// The seven phases over table[0, count), one launch each.
cudaError_t LaunchTable(cudaStream_t stream, const AdafactorEntry* table, int64_t count,
                        const TableUnits& u, bool any_factored, const float* found_inf) {
  cudaError_t e = Launch(MultiScalarsKernel, GridFor(count, kThreads), kThreads, 0, stream, table,
                         count, found_inf);
  const unsigned row_blocks = GridFor(u.rows, kRowsPerBlock);
  if (e == cudaSuccess) {
    e = Launch(MultiRowSumsKernel, row_blocks, kThreads, 0, stream, table, count, u.rows,
               found_inf);
  }
  if (e == cudaSuccess && any_factored) {
    e = Launch(MultiRowStatesKernel, GridFor(u.rows, kThreads), kThreads, 0, stream, table, count,
               u.rows, found_inf);
    if (e == cudaSuccess && u.cols > 0) {
      e = Launch(MultiColStatesKernel, GridFor(u.cols, kThreads), kThreads, 0, stream, table,
                 count, u.cols, found_inf);
    }
  }
  if (e == cudaSuccess) {
    e = Launch(MultiTotalsKernel, GridFor(count, 1), kThreads, 0, stream, table, count, found_inf);
  }
  if (e == cudaSuccess) {
    e = Launch(MultiUpdateSumsKernel, row_blocks, kThreads, 0, stream, table, count, u.rows,
               found_inf);
  }
  if (e == cudaSuccess) {
    e = Launch(MultiDenominatorKernel, GridFor(count, kRowsPerBlock), kThreads, 0, stream, table,
               count, found_inf);
  }
  if (e == cudaSuccess) {
    e = Launch(MultiApplyKernel, GridFor(u.elements, kThreads), kThreads, 0, stream, table,
               count, u.elements, found_inf);
  }
  return e;
}

}  // namespace

Status CudaBackend::AdafactorStep(const backend::AdafactorStepCall& a) {
  Step s;
  s.grad = Dev(a.grad);
  s.found_inf = a.found_inf.f32();
  s.multiplier = a.multiplier.f32();
  s.lr = a.lr.f32();
  s.step_counter = a.step_counter.i32();
  s.master = a.master.f32();
  s.second = a.second_moment.f32();
  s.col = a.col.f32();
  s.m = a.m.f32();
  s.working = Dev(a.working);
  s.shape = a.shape;
  s.params = *a.params;
  s.stochastic = a.rounding.stochastic ? 1 : 0;
  s.rounding_seed = a.rounding.seed;
  s.rounding_tensor = a.rounding.TensorOf(0);
  const int64_t n = a.n, rows = s.shape.row_count();
  if (n > 0) {
    Scratch scratch(*this);
    MNT_RETURN_IF_ERROR(scratch.Allocate(ScratchBytes(s.shape)));
    PlaceScratch(static_cast<char*>(scratch.data()), &s);
    const unsigned row_blocks = GridFor(rows, kRowsPerBlock);
    MNT_RETURN_IF_ERROR(
        Launched(a, Launch(ScalarsKernel, 1, 1, 0, stream, s), "adafactor_scalars"));
    const MNT_DType working = s.working.data != nullptr ? s.working.dtype : s.grad.dtype;
    cudaError_t err = WithStoragePair(s.grad.dtype, working, [&](auto g, auto w) {
      using G = decltype(g);
      using W = decltype(w);
      cudaError_t e = Launch(RowSumsKernel<G>, row_blocks, kThreads, 0, stream, s);
      if (e == cudaSuccess && s.shape.factored) {
        e = Launch(RowStatesKernel, GridFor(rows, kThreads), kThreads, 0, stream, s);
        if (e == cudaSuccess) {
          e = Launch(ColStatesKernel<G>, GridFor(s.shape.col_states(), kThreads), kThreads, 0,
                     stream, s);
        }
      }
      if (e == cudaSuccess) e = Launch(TotalsKernel, 1, kThreads, 0, stream, s);
      if (e == cudaSuccess) e = Launch(UpdateSumsKernel<G>, row_blocks, kThreads, 0, stream, s);
      if (e == cudaSuccess) e = Launch(DenominatorKernel, 1, kWarp, 0, stream, s);
      if (e == cudaSuccess) e = Launch(ApplyKernel<G, W>, GridFor(n, kThreads), kThreads, 0, stream, s);
      return e;
    });
    MNT_RETURN_IF_ERROR(Launched(a, err, "adafactor_step"));
  }
  if (s.step_counter == nullptr) return Status::Ok();
  return Launched(a, Launch(CountAppliedAdafactorStepKernel, 1, 1, 0, stream, a.step_counter.i32(),
                            s.found_inf),
                  "adafactor_count_applied_step");
}

// ABI 1.14: every tensor's Step (its params as a single call's: lr and
// weight decay resolved), one scratch for all, the table uploaded once
// (UploadForKernel: a recorded step's graph owns a pinned copy), the seven
// phases, then the counters.
Status CudaBackend::MultiAdafactorStep(const backend::MultiAdafactorStepCall& a) {
  const MNT_MultiAdafactorParams* p = a.params;
  std::vector<AdafactorEntry> table(a.tensors.size());
  size_t scratch_bytes = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const backend::MultiAdafactorTensor& t = a.tensors[i];
    Step& s = table[i].s;
    s.grad = Dev(t.grad);
    s.found_inf = a.found_inf.f32();
    s.multiplier = a.multiplier.f32();
    s.lr = a.lr.f32();
    s.lr_scale = t.lr_scale;
    s.step_counter = t.step_counter.i32();
    s.master = t.master.f32();
    s.second = t.state1.f32();
    s.col = t.col.f32();
    s.m = t.m.f32();
    s.working = Dev(t.working);
    s.shape = t.shape;
    s.params = MNT_AdafactorParams{MNT_AdafactorParams_STRUCT_SIZE,
                                   t.lr,
                                   p->beta1,
                                   p->decay_rate,
                                   p->epsilon1,
                                   p->epsilon2,
                                   p->clip_threshold,
                                   t.weight_decay,
                                   p->relative_step,
                                   p->scale_parameter,
                                   p->warmup_init,
                                   p->step,
                                   p->rounding,
                                   p->rounding_seed,
                                   a.rounding.TensorOf(i)};
    s.stochastic = a.rounding.stochastic ? 1 : 0;
    s.rounding_seed = a.rounding.seed;
    s.rounding_tensor = a.rounding.TensorOf(i);
    scratch_bytes += ScratchBytes(s.shape);
  }
  // Each tensor's first row, column state and element; none for a tensor
  // without elements (as the single op: nothing to step).
  TableUnits units;
  bool any_factored = false;
  for (AdafactorEntry& e : table) {
    const FactoredShape& shape = e.s.shape;
    const bool empty = shape.numel() == 0;
    e.first_row = units.rows;
    e.first_col = units.cols;
    e.first_block = units.elements;
    units.rows += empty ? 0 : shape.row_count();
    units.cols += empty || !shape.factored ? 0 : shape.col_states();
    units.elements += shape.numel();
    any_factored = any_factored || (shape.factored && !empty);
  }
  if (units.elements == 0 && !a.step_counters) return Status::Ok();
  Scratch scratch(*this);
  MNT_RETURN_IF_ERROR(scratch.Allocate(scratch_bytes));
  char* base = static_cast<char*>(scratch.data());
  for (AdafactorEntry& e : table) {
    PlaceScratch(base, &e.s);
    base += ScratchBytes(e.s.shape);
  }
  Scratch device_table(*this);
  const size_t bytes = sizeof(AdafactorEntry) * table.size();
  MNT_RETURN_IF_ERROR(device_table.Allocate(bytes));
  MNT_RETURN_IF_ERROR(UploadForKernel(device_table.data(), table.data(), bytes));
  const AdafactorEntry* dev = static_cast<const AdafactorEntry*>(device_table.data());
  const float* found_inf = a.found_inf.f32();
  if (units.elements > 0) {
    MNT_RETURN_IF_ERROR(Launched(a,
                                 LaunchTable(stream, dev, static_cast<int64_t>(table.size()),
                                             units, any_factored, found_inf),
                                 "multi_adafactor_step"));
  }
  if (!a.step_counters) return Status::Ok();
  const int64_t count = static_cast<int64_t>(table.size());
  return Launched(a,
                  Launch(MultiCountAppliedAdafactorStepsKernel, GridFor(count, kThreads), kThreads,
                         0, stream, dev, count, found_inf),
                  "multi_adafactor_count_applied_steps");
}

}  // namespace mnt::cuda

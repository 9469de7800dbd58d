// ADAFACTOR_STEP (ABI 1.12) and MULTI_ADAFACTOR_STEP (ABI 1.14):
// Adafactor's step on whole parameters (common/adafactor_math.h), with the
// CPU backend's sums in their fixed order: a row's sum is one warp's (lane
// l adds elements l, l + 32, ... in double, then the lanes are added in
// lane order, LaneOrderedSum's order), a column's one thread's (rows in
// order), a tensor's total one warp's over the rows' sums. The step is a
// sequence of kernels on the stream, the per-step scalars (from the device
// step counter and lr, when given) derived on the device, so nothing is
// read back:
//
//   1. scalars: beta2_t, the relative step            (a thread per tensor)
//   2. row sums of g^2 + eps1 (factored) and of w^2   (a warp per row)
//   3. factored: the row states (a thread per row) and the column states
//      (a thread per column, its sum over the rows in order)
//   4. lr_t from the weights' RMS; factored: each batch's mean row state
//      (a block per tensor)
//   5. unfactored: the second moment; each row's sum of u^2 (a warp per row)
//   6. the clipping denominator                       (a warp per tensor)
//   7. the update, first moment, decay, weights and working copy
//      (a thread per element)
//
// Both ops run one table of tensors, uploaded to the device once
// (step_table.cuh; ADAFACTOR_STEP's holds its one tensor), each phase one
// launch over every tensor of the table: every unit (a row, a column, an
// element) finds its tensor from the table's prefix of first rows, columns
// or elements, and every tensor keeps its own scratch and sums, so the
// bits are n single steps'. Storage types are read through AnyStorage (the
// same bits as the specialised loads and stores, storage_types_test): the
// per-element work is double-precision sums and a division, beside which
// the dtype switch is noise, and one instantiation of each kernel keeps
// the plugin within the device bundle's size. found_inf skips every kernel
// (each reads it).
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
__device__ inline float Grad(const Step& s, int64_t i) {
  const float g = Load<AnyStorage>(s.grad, i);
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
__device__ inline float Update(const Step& s, int64_t i) {
  const float g = Grad(s, i);
  if (!s.shape.factored) return UnfactoredUpdate(g, s.second[i]);
  const int64_t C = s.shape.cols, r = i / C, b = r / s.shape.rows;
  return FactoredUpdate(g, s.second[r], s.row_mean[b], s.col[b * C + i % C]);
}

// ---- Each phase's work for one tensor's unit ------------------------------

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
__device__ inline void RowSums(const Step& s, int64_t r) {
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t C = s.shape.cols;
  if (s.shape.factored) {
    const double g2 =
        WarpLaneOrderedSum(C, [&](int64_t j) { return SquaredGrad(c, Grad(s, r * C + j)); });
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
__device__ inline void ColState(const Step& s, int64_t k) {
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t R = s.shape.rows, C = s.shape.cols;
  const int64_t b = k / C, j = k % C;
  double sum = 0.0;
  for (int64_t r = 0; r < R; ++r) sum = AddRn(sum, SquaredGrad(c, Grad(s, (b * R + r) * C + j)));
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
__device__ inline void UpdateSums(const Step& s, int64_t r) {
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t C = s.shape.cols;
  const double u2 = WarpLaneOrderedSum(C, [&](int64_t j) {
    const int64_t i = r * C + j;
    if (!s.shape.factored) {
      s.second[i] = DecaySecondMoment(c, s.second[i], SquaredGrad(c, Grad(s, i)));
    }
    const double u = Update(s, i);
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
__device__ inline void Apply(const Step& s, const ApplyScalars& a, int64_t i) {
  float w = s.master[i];
  AdafactorApply(a.c, a.lr_t, a.denominator, Update(s, i), s.m != nullptr ? &s.m[i] : nullptr,
                 &w);
  s.master[i] = w;
  if (s.working.data == nullptr) return;
  if (s.stochastic != 0) {
    static_cast<uint16_t*>(s.working.data)[i] = FloatToBf16BitsStochastic(w, a.key, i);
  } else {
    Store<AnyStorage>(s.working, i, w);
  }
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

// ---- The table's kernels -----------------------------------------------------

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

__global__ void ScalarsKernel(const AdafactorEntry* table, int64_t count,
                              const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    StepScalars(table[e].s);
  }
}

__global__ void RowSumsKernel(const AdafactorEntry* table, int64_t count, int64_t rows,
                              const float* found_inf) {
  if (Skip(found_inf)) return;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t u = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; u < rows;
       u += warps) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstRow{});
    RowSums(e.s, u - e.first_row);
  }
}

__global__ void RowStatesKernel(const AdafactorEntry* table, int64_t count, int64_t rows,
                                const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < rows;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstRow{});
    if (e.s.shape.factored) RowState(e.s, u - e.first_row);
  }
}

__global__ void ColStatesKernel(const AdafactorEntry* table, int64_t count, int64_t cols,
                                const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < cols;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstCol{});
    ColState(e.s, u - e.first_col);
  }
}

__global__ void TotalsKernel(const AdafactorEntry* table, int64_t count,
                             const float* found_inf) {
  if (Skip(found_inf)) return;
  for (int64_t e = blockIdx.x; e < count; e += gridDim.x) Totals(table[e].s);
}

__global__ void UpdateSumsKernel(const AdafactorEntry* table, int64_t count, int64_t rows,
                                 const float* found_inf) {
  if (Skip(found_inf)) return;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t u = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; u < rows;
       u += warps) {
    const AdafactorEntry& e = EntryOfUnit(table, count, u, FirstRow{});
    UpdateSums(e.s, u - e.first_row);
  }
}

__global__ void DenominatorKernel(const AdafactorEntry* table, int64_t count,
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
__global__ void ApplyKernel(const AdafactorEntry* table, int64_t count, int64_t elements,
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
    Apply(table[at].s, a, u - begin);
  }
}

__global__ void CountAppliedAdafactorStepsKernel(const AdafactorEntry* table,
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
  cudaError_t e = Launch(ScalarsKernel, GridFor(count, kThreads), kThreads, 0, stream, table,
                         count, found_inf);
  const unsigned row_blocks = GridFor(u.rows, kRowsPerBlock);
  if (e == cudaSuccess) {
    e = Launch(RowSumsKernel, row_blocks, kThreads, 0, stream, table, count, u.rows,
               found_inf);
  }
  if (e == cudaSuccess && any_factored) {
    e = Launch(RowStatesKernel, GridFor(u.rows, kThreads), kThreads, 0, stream, table, count,
               u.rows, found_inf);
    if (e == cudaSuccess && u.cols > 0) {
      e = Launch(ColStatesKernel, GridFor(u.cols, kThreads), kThreads, 0, stream, table,
                 count, u.cols, found_inf);
    }
  }
  if (e == cudaSuccess) {
    e = Launch(TotalsKernel, GridFor(count, 1), kThreads, 0, stream, table, count, found_inf);
  }
  if (e == cudaSuccess) {
    e = Launch(UpdateSumsKernel, row_blocks, kThreads, 0, stream, table, count, u.rows,
               found_inf);
  }
  if (e == cudaSuccess) {
    e = Launch(DenominatorKernel, GridFor(count, kRowsPerBlock), kThreads, 0, stream, table,
               count, found_inf);
  }
  if (e == cudaSuccess) {
    e = Launch(ApplyKernel, GridFor(u.elements, kThreads), kThreads, 0, stream, table,
               count, u.elements, found_inf);
  }
  return e;
}

// Every tensor's Step filled but for its scratch: places the scratch (one
// allocation), numbers each tensor's rows, column states and elements (none
// for a tensor without elements: as the single op, nothing to step),
// uploads the table once (UploadForKernel: a recorded step's graph owns a
// pinned copy), runs the seven phases and then advances the step counters.
Status RunAdafactorTable(CudaBackend& be, const backend::TypedCall& call,
                         std::vector<AdafactorEntry>& table, const float* found_inf,
                         bool step_counters, const char* kernel, const char* count_kernel) {
  TableUnits units;
  bool any_factored = false;
  size_t scratch_bytes = 0;
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
    scratch_bytes += ScratchBytes(shape);
  }
  if (units.elements == 0 && !step_counters) return Status::Ok();
  Scratch scratch(be);
  MNT_RETURN_IF_ERROR(scratch.Allocate(scratch_bytes));
  char* base = static_cast<char*>(scratch.data());
  for (AdafactorEntry& e : table) {
    PlaceScratch(base, &e.s);
    base += ScratchBytes(e.s.shape);
  }
  Scratch device_table(be);
  const size_t bytes = sizeof(AdafactorEntry) * table.size();
  MNT_RETURN_IF_ERROR(device_table.Allocate(bytes));
  MNT_RETURN_IF_ERROR(be.UploadForKernel(device_table.data(), table.data(), bytes));
  const AdafactorEntry* dev = static_cast<const AdafactorEntry*>(device_table.data());
  const int64_t count = static_cast<int64_t>(table.size());
  if (units.elements > 0) {
    MNT_RETURN_IF_ERROR(Launched(
        call, LaunchTable(be.stream, dev, count, units, any_factored, found_inf), kernel));
  }
  if (!step_counters) return Status::Ok();
  return Launched(call,
                  Launch(CountAppliedAdafactorStepsKernel, GridFor(count, kThreads), kThreads,
                         0, be.stream, dev, count, found_inf),
                  count_kernel);
}

// A tensor's Step but for its scratch; found_inf, the multiplier and the
// device lr are the call's.
Step TensorStep(const backend::StepInputs& in, const Operand& step_counter,
                const Operand& master, const Operand& second, const Operand& col,
                const Operand& m, const Operand& working, const FactoredShape& shape,
                const MNT_AdafactorParams& params, const backend::WorkingRounding& rounding,
                size_t index) {
  Step s;
  s.grad = Dev(in.grad);
  s.found_inf = in.found_inf.f32();
  s.multiplier = in.multiplier.f32();
  s.lr = in.lr.f32();
  s.step_counter = step_counter.i32();
  s.master = master.f32();
  s.second = second.f32();
  s.col = col.f32();
  s.m = m.f32();
  s.working = Dev(working);
  s.shape = shape;
  s.params = params;
  s.stochastic = rounding.stochastic ? 1 : 0;
  s.rounding_seed = rounding.seed;
  s.rounding_tensor = rounding.TensorOf(index);
  return s;
}

}  // namespace

// A table of one.
Status CudaBackend::AdafactorStep(const backend::AdafactorStepCall& a) {
  std::vector<AdafactorEntry> table(1);
  table[0].s = TensorStep(a, a.step_counter, a.master, a.second_moment, a.col, a.m, a.working,
                          a.shape, *a.params, a.rounding, 0);
  return RunAdafactorTable(*this, a, table, a.found_inf.f32(), a.step_counter.present(),
                           "adafactor_step", "adafactor_count_applied_step");
}

// ABI 1.14: every tensor's Step with its params as a single call's (lr and
// weight decay resolved, its rounding tensor index).
Status CudaBackend::MultiAdafactorStep(const backend::MultiAdafactorStepCall& a) {
  const MNT_MultiAdafactorParams* p = a.params;
  std::vector<AdafactorEntry> table(a.tensors.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const backend::MultiAdafactorTensor& t = a.tensors[i];
    backend::StepInputs in;
    in.grad = t.grad;
    in.found_inf = a.found_inf;
    in.multiplier = a.multiplier;
    in.lr = a.lr;
    const MNT_AdafactorParams params{MNT_AdafactorParams_STRUCT_SIZE,
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
    table[i].s = TensorStep(in, t.step_counter, t.master, t.state1, t.col, t.m, t.working,
                            t.shape, params, a.rounding, i);
    table[i].s.lr_scale = t.lr_scale;
  }
  return RunAdafactorTable(*this, a, table, a.found_inf.f32(), a.step_counters,
                           "multi_adafactor_step", "multi_adafactor_count_applied_steps");
}

}  // namespace mnt::cuda

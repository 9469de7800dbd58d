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
// found_inf skips every kernel (each reads it). No multi-tensor form: the
// step of a tensor is these few launches, whose sums span the tensor, and
// Mantissa's models have a few tens of parameter tensors (GPT-2 stacks its
// layers); a recorded step (CUDA graph) replays them without host cost.
#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

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
  const int32_t* step_counter = nullptr;
  float* master = nullptr;
  float* second = nullptr;  // row state (factored) or the full second moment
  float* col = nullptr;     // factored only
  float* m = nullptr;       // beta1 != 0 only
  DevTensor working;
  FactoredShape shape;
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

__device__ inline bool Skip(const Step& s) {
  return s.found_inf != nullptr && *s.found_inf != 0.0f;
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

// 1. The per-step scalars, from the device counter and lr when given.
__global__ void ScalarsKernel(Step s) {
  if (Skip(s)) return;
  const MNT_AdafactorParams& p = s.params;
  const int64_t step = s.step_counter != nullptr ? int64_t{*s.step_counter} + 1 : p.step;
  s.scalars->step = step;
  s.scalars->c = AdafactorCoefficientsForStep(
      s.lr != nullptr ? *s.lr : p.lr, p.beta1, p.decay_rate, p.epsilon1, p.epsilon2,
      p.clip_threshold, p.weight_decay, p.relative_step != 0, p.scale_parameter != 0,
      p.warmup_init != 0, step);
}

// 2. Each row's sum of g^2 + eps1 (factored) and of w^2 (parameter scaling).
template <typename G>
__global__ void RowSumsKernel(Step s) {
  if (Skip(s)) return;
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t rows = s.shape.row_count(), C = s.shape.cols;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; r < rows;
       r += warps) {
    if (s.shape.factored) {
      const double g2 = WarpLaneOrderedSum(C, [&](int64_t j) { return SquaredGrad(c, Grad<G>(s, r * C + j)); });
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
}

// 3a. Factored: the row states, one thread per row.
__global__ void RowStatesKernel(Step s) {
  if (Skip(s)) return;
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t rows = s.shape.row_count();
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    s.second[r] = DecaySecondMoment(c, s.second[r], MeanOf(s.row_sq[r], s.shape.cols));
  }
}

// 3b. Factored: the column states, one thread per (batch, column).
template <typename G>
__global__ void ColStatesKernel(Step s) {
  if (Skip(s)) return;
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t R = s.shape.rows, C = s.shape.cols, cols = s.shape.col_states();
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < cols;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = k / C, j = k % C;
    double sum = 0.0;
    for (int64_t r = 0; r < R; ++r) sum = AddRn(sum, SquaredGrad(c, Grad<G>(s, (b * R + r) * C + j)));
    s.col[k] = DecaySecondMoment(c, s.col[k], MeanOf(sum, R));
  }
}

// 4. lr_t (warp 0) and each batch's mean row state (a warp per batch).
__global__ void TotalsKernel(Step s) {
  if (Skip(s)) return;
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

// 5. Unfactored: the second moment; each row's sum of u^2 (a warp per row).
template <typename G>
__global__ void UpdateSumsKernel(Step s) {
  if (Skip(s)) return;
  const AdafactorCoefficients c = s.scalars->c;
  const int64_t rows = s.shape.row_count(), C = s.shape.cols;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarp; r < rows;
       r += warps) {
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
}

// 6. The clipping denominator, one warp.
__global__ void DenominatorKernel(Step s) {
  if (Skip(s)) return;
  const AdafactorCoefficients c = s.scalars->c;
  const double sum = WarpLaneOrderedSum(s.shape.row_count(), [&](int64_t r) { return s.u_sq[r]; });
  if (threadIdx.x == 0) s.scalars->denominator = ClipDenominator(c, RmsFromSum(sum, s.shape.numel()));
}

// 7. The step of every element, and its working copy.
template <typename G, typename W>
__global__ void ApplyKernel(Step s) {
  if (Skip(s)) return;
  const AdafactorCoefficients c = s.scalars->c;
  const float lr_t = s.scalars->lr_t, denominator = s.scalars->denominator;
  const uint64_t key = s.stochastic != 0
                           ? StochasticRoundingKey(s.rounding_seed, s.scalars->step, s.rounding_tensor)
                           : 0;
  const int64_t n = s.shape.numel();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float w = s.master[i];
    AdafactorApply(c, lr_t, denominator, Update<G>(s, i), s.m != nullptr ? &s.m[i] : nullptr, &w);
    s.master[i] = w;
    if (s.working.data == nullptr) continue;
    if (s.stochastic != 0) {
      static_cast<uint16_t*>(s.working.data)[i] = FloatToBf16BitsStochastic(w, key, i);
    } else {
      Store<W>(s.working, i, w);
    }
  }
}

__global__ void CountAppliedAdafactorStepKernel(int32_t* counter, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *counter += 1;
}

// Bytes of scratch, 8-byte aligned pieces: the scalars, three row arrays of
// doubles, the batches' means.
size_t ScratchBytes(const FactoredShape& s) {
  const size_t rows = static_cast<size_t>(s.row_count());
  return ((sizeof(Scalars) + 7) / 8) * 8 + 3 * rows * sizeof(double) +
         static_cast<size_t>(s.batches) * sizeof(float);
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
    char* base = static_cast<char*>(scratch.data());
    s.scalars = reinterpret_cast<Scalars*>(base);
    base += ((sizeof(Scalars) + 7) / 8) * 8;
    s.row_sq = reinterpret_cast<double*>(base);
    s.w_sq = s.row_sq + rows;
    s.u_sq = s.w_sq + rows;
    s.row_mean = reinterpret_cast<float*>(s.u_sq + rows);
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

}  // namespace mnt::cuda

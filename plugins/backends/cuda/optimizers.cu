// SGD_STEP and ADAMW_STEP: fused updates of the fp32 master weights (and
// the rounded working copy) with torch.optim's per-element formulas
// (common/elementwise_math.h, step_math.h). found_inf, the gradient
// multiplier and AdamW's step counter are read on the device, so a step
// needs no host sync. The kernels are compiled per storage type of the
// gradient and the working copy (when they share one) and chosen per launch;
// they read and write 4 elements at a time (16-byte loads when aligned).
#include <cuda_runtime.h>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

// What both kernels read and write; device scalars are NULL when absent.
struct StepBuffers {
  DevTensor grad;
  const float* found_inf = nullptr;
  const float* multiplier = nullptr;
  float* master = nullptr;
  float* state1 = nullptr;  // momentum, or Adam m
  float* state2 = nullptr;  // Adam v
  DevTensor working;        // optional rounded copy
  int64_t n = 0;
  // AdamW only: applied-step counter on the device (NULL: the coefficients
  // passed in are used as they are).
  int32_t* step_counter = nullptr;
};

StepBuffers Buffers(const backend::StepInputs& in) {
  StepBuffers b;
  b.grad = Dev(in.grad);
  b.found_inf = in.found_inf.f32();
  b.multiplier = in.multiplier.f32();
  b.n = in.n;
  return b;
}

__device__ inline bool SkipStep(const StepBuffers& b) {
  return b.found_inf != nullptr && *b.found_inf != 0.0f;
}
__device__ inline float Multiplier(const StepBuffers& b) {
  return b.multiplier != nullptr ? *b.multiplier : 1.0f;
}

// The fp32 state arrays as DevTensors, for the 4-element loads/stores.
__device__ inline DevTensor F32(float* p) { return DevTensor{p, MNT_DTYPE_F32}; }

// Each thread updates groups of 4 consecutive elements (grid-stride): one
// 16-byte load/store per fp32 array and one 8-byte (16-bit storage) per
// gradient / working copy group when `vec` (every pointer 16-byte aligned),
// element by element otherwise and for the tail. Same per-element formulas
// in the same order: the same bits either way.
template <typename S>
__global__ void SgdKernel(StepBuffers b, SgdCoefficients c, bool vec) {
  if (SkipStep(b)) return;  // overflow step: state stays bit-identical
  const float mult = Multiplier(b);
  const int64_t stride = 4ll * gridDim.x * blockDim.x;
  for (int64_t i = 4ll * (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x);
       i < b.n; i += stride) {
    const int count = b.n - i < 4 ? static_cast<int>(b.n - i) : 4;
    float g[4], w[4], mom[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    Load4<S>(b.grad, i, count, vec, g);
    Load4<F32Storage>(F32(b.master), i, count, vec, w);
    if (b.state1 != nullptr) Load4<F32Storage>(F32(b.state1), i, count, vec, mom);
    for (int k = 0; k < count; ++k) {
      if (mult != 1.0f) g[k] *= mult;
      SgdUpdate(c, g[k], &w[k], &mom[k]);
    }
    Store4<F32Storage>(F32(b.master), i, count, vec, w);
    if (b.state1 != nullptr) Store4<F32Storage>(F32(b.state1), i, count, vec, mom);
    if (b.working.data != nullptr) Store4<S>(b.working, i, count, vec, w);
  }
}

// With b.step_counter, every block derives the bias corrections from
// counter + 1 on the device.
template <typename S>
__global__ void AdamWKernel(StepBuffers b, AdamWCoefficients host_c, bool vec) {
  if (SkipStep(b)) return;  // uniform across the grid: no thread reaches the barrier
  __shared__ AdamWCoefficients shared_c;
  if (b.step_counter != nullptr) {
    if (threadIdx.x == 0) {
      shared_c = AdamWCoefficientsForStep(host_c.lr, host_c.beta1, host_c.beta2,
                                          host_c.epsilon, host_c.weight_decay,
                                          int64_t{*b.step_counter} + 1);
    }
    __syncthreads();
  }
  const AdamWCoefficients c = b.step_counter != nullptr ? shared_c : host_c;
  const float mult = Multiplier(b);
  const int64_t stride = 4ll * gridDim.x * blockDim.x;
  for (int64_t i = 4ll * (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x);
       i < b.n; i += stride) {
    const int count = b.n - i < 4 ? static_cast<int>(b.n - i) : 4;
    float g[4], w[4], m[4], v[4];
    Load4<S>(b.grad, i, count, vec, g);
    Load4<F32Storage>(F32(b.master), i, count, vec, w);
    Load4<F32Storage>(F32(b.state1), i, count, vec, m);
    Load4<F32Storage>(F32(b.state2), i, count, vec, v);
    for (int k = 0; k < count; ++k) {
      if (mult != 1.0f) g[k] *= mult;
      AdamWUpdate(c, g[k], &w[k], &m[k], &v[k]);
    }
    Store4<F32Storage>(F32(b.master), i, count, vec, w);
    Store4<F32Storage>(F32(b.state1), i, count, vec, m);
    Store4<F32Storage>(F32(b.state2), i, count, vec, v);
    if (b.working.data != nullptr) Store4<S>(b.working, i, count, vec, w);
  }
}

// Every buffer a step kernel touches is 16-byte aligned (absent ones are).
bool StepVectorizable(const StepBuffers& b) {
  return Aligned16(b.grad.data) && Aligned16(b.master) && Aligned16(b.state1) &&
         Aligned16(b.state2) && Aligned16(b.working.data);
}

// After every block of the AdamW update has read the counter (stream order).
__global__ void CountAppliedStepKernel(int32_t* counter, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *counter += 1;
}

}  // namespace

Status CudaBackend::SgdStep(const backend::SgdStepCall& s) {
  StepBuffers b = Buffers(s);
  b.master = s.master.f32();
  b.state1 = s.momentum.f32();
  b.working = Dev(s.working);
  if (b.n == 0) return Status::Ok();
  const cudaError_t err =
      WithStorage(CommonDType({b.grad.dtype, b.working.dtype}), [&](auto storage) {
        return Launch(SgdKernel<decltype(storage)>, GridFor((b.n + 3) / 4, kThreads), kThreads,
                      0, stream, b, s.coefficients, StepVectorizable(b));
      });
  return Launched(s, err, "sgd_step");
}

Status CudaBackend::AdamWStep(const backend::AdamWStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  StepBuffers b = Buffers(a);
  b.master = a.master.f32();
  b.state1 = a.m.f32();
  b.state2 = a.v.f32();
  b.working = Dev(a.working);
  // ABI 1.4: with the device counter the kernel derives the bias corrections
  // itself (its range is not checked here: that would need a host read).
  b.step_counter = a.step_counter.i32();
  // Bias corrections in double with the shared formula, the same bits as
  // the CPU backend and as the device-counter path.
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay,
      b.step_counter != nullptr ? 1 : p->step);
  if (b.n > 0) {
    const cudaError_t err =
        WithStorage(CommonDType({b.grad.dtype, b.working.dtype}), [&](auto storage) {
          return Launch(AdamWKernel<decltype(storage)>, GridFor((b.n + 3) / 4, kThreads),
                        kThreads, 0, stream, b, c, StepVectorizable(b));
        });
    MNT_RETURN_IF_ERROR(Launched(a, err, "adamw_step"));
  }
  if (b.step_counter == nullptr) return Status::Ok();
  return Launched(a, Launch(CountAppliedStepKernel, 1, 1, 0, stream, b.step_counter,
                            b.found_inf),
                  "adamw_count_applied_step");
}

}  // namespace mnt::cuda

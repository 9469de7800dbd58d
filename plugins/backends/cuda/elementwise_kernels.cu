// Elementwise kernels: FILL, CAST / operand staging, ADD, activations, the
// fused non-finite check + unscale, the fused SGD / AdamW steps (fp32 master
// plus rounded working copy), GEMM's K == 0 case and (ABI 1.4) the one-thread
// loss-scale update and clip coefficient. Per-element math comes
// from plugins/backends/common, the same functions the CPU backend runs.
#include <cuda_runtime.h>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/kernels.h"

namespace mnt::cuda {
namespace {

// Each thread handles groups of 4 consecutive elements (grid-stride).
template <typename Body>
__global__ void Map4Kernel(Body body, int64_t n, bool vec) {
  const int64_t stride = 4ll * gridDim.x * blockDim.x;
  for (int64_t i = 4ll * (blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += stride) {
    const int count = n - i < 4 ? static_cast<int>(n - i) : 4;
    body(i, count, vec);
  }
}

template <typename Body>
cudaError_t LaunchMap4(cudaStream_t s, Body body, int64_t n, bool vec) {
  if (n <= 0) return cudaGetLastError();
  Map4Kernel<<<GridFor((n + 3) / 4, kThreads), kThreads, 0, s>>>(body, n, vec);
  return cudaGetLastError();
}

struct FillBody {
  DevTensor out;
  float value;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    const float v[4] = {value, value, value, value};
    Store4(out, i, count, vec, v);
  }
};

__global__ void FillI32Kernel(int32_t* out, int64_t n, int32_t value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

struct ConvertBody {
  DevTensor in, out;
  MNT_ComputeMode round_to;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float v[4];
    Load4(in, i, count, vec, v);
    if (round_to != MNT_COMPUTE_F32) {
      for (int k = 0; k < count; ++k) v[k] = RoundToCompute(v[k], round_to);
    }
    Store4(out, i, count, vec, v);
  }
};

struct AddBody {
  DevTensor a, b, out;
  float alpha, beta;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float x[4], y[4];
    Load4(a, i, count, vec, x);
    if (b.data != nullptr) {
      Load4(b, i, count, vec, y);
      for (int k = 0; k < count; ++k) x[k] = alpha * x[k] + beta * y[k];
    } else {
      for (int k = 0; k < count; ++k) x[k] = alpha * x[k];
    }
    Store4(out, i, count, vec, x);
  }
};

struct ActivationForwardBody {
  MNT_Activation act;
  DevTensor x, y;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float v[4];
    Load4(x, i, count, vec, v);
    for (int k = 0; k < count; ++k) {
      if (act == MNT_ACTIVATION_RELU) v[k] = Relu(v[k]);
      else if (act == MNT_ACTIVATION_GELU_TANH) v[k] = GeluTanh(v[k]);
    }
    Store4(y, i, count, vec, v);
  }
};

struct ActivationBackwardBody {
  MNT_Activation act;
  DevTensor x, dy, dx;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float xv[4], g[4];
    Load4(x, i, count, vec, xv);
    Load4(dy, i, count, vec, g);
    for (int k = 0; k < count; ++k) {
      if (act == MNT_ACTIVATION_RELU) g[k] = ReluBackward(xv[k], g[k]);
      else if (act == MNT_ACTIVATION_GELU_TANH) g[k] = GeluTanhBackward(xv[k], g[k]);
    }
    Store4(dx, i, count, vec, g);
  }
};

struct UnscaleBody {
  const float* inv_scale;
  DevTensor in, out;
  float* found_inf;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float v[4];
    Load4(in, i, count, vec, v);
    const float inv = *inv_scale;
    bool found = false;
    for (int k = 0; k < count; ++k) v[k] = UnscaleAndCheck(v[k], inv, &found);
    // Every writer stores the same value, so the race is benign.
    if (found) *found_inf = 1.0f;
    Store4(out, i, count, vec, v);
  }
};

// Optimizer steps: the skip test and the multiplier are read on the device.
__device__ inline bool SkipStep(const StepBuffers& b) {
  return b.found_inf != nullptr && *b.found_inf != 0.0f;
}
__device__ inline float Multiplier(const StepBuffers& b) {
  return b.multiplier != nullptr ? *b.multiplier : 1.0f;
}

__global__ void SgdKernel(StepBuffers b, SgdCoefficients c) {
  if (SkipStep(b)) return;  // overflow step: state stays bit-identical
  const float mult = Multiplier(b);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < b.n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = Load(b.grad, i);
    if (mult != 1.0f) g *= mult;
    float unused = 0.0f;
    SgdUpdate(c, g, &b.master[i], b.state1 != nullptr ? &b.state1[i] : &unused);
    if (b.working.data != nullptr) Store(b.working, i, b.master[i]);
  }
}

__global__ void AdamWKernel(StepBuffers b, AdamWCoefficients host_c) {
  if (SkipStep(b)) return;  // uniform across the grid: no thread reaches the barrier
  __shared__ AdamWCoefficients shared_c;
  if (b.step_counter != nullptr) {
    // Bias corrections from the device counter, once per block.
    if (threadIdx.x == 0) {
      shared_c = AdamWCoefficientsForStep(host_c.lr, host_c.beta1, host_c.beta2,
                                          host_c.epsilon, host_c.weight_decay,
                                          int64_t{*b.step_counter} + 1);
    }
    __syncthreads();
  }
  const AdamWCoefficients c = b.step_counter != nullptr ? shared_c : host_c;
  const float mult = Multiplier(b);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < b.n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = Load(b.grad, i);
    if (mult != 1.0f) g *= mult;
    float w = b.master[i], m = b.state1[i], v = b.state2[i];
    AdamWUpdate(c, g, &w, &m, &v);
    b.master[i] = w;
    b.state1[i] = m;
    b.state2[i] = v;
    if (b.working.data != nullptr) Store(b.working, i, w);
  }
}

// After every block of the AdamW update has read the counter (stream order).
__global__ void CountAppliedStepKernel(int32_t* counter, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *counter += 1;
}

__global__ void AmpUpdateScaleKernel(const float* found_inf, float* scale,
                                     int32_t* tracker, float* inv_scale,
                                     float growth_factor, float backoff_factor,
                                     int32_t growth_interval) {
  AmpUpdateScale(*found_inf != 0.0f, growth_factor, backoff_factor,
                 growth_interval, scale, tracker);
  *inv_scale = InvScale(*scale);
}

__global__ void ClipCoefficientKernel(const float* norm_squared,
                                      const float* found_inf, float max_norm,
                                      float* multiplier) {
  const bool skip = found_inf != nullptr && *found_inf != 0.0f;
  *multiplier = ClipCoefficient(*norm_squared, max_norm, skip);
}

__global__ void GemmEmptyKKernel(DevTensor c, int64_t m, int64_t n, float beta,
                                 DevTensor bias, MNT_ComputeMode compute) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < m * n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = beta != 0.0f ? Load(c, i) * beta : 0.0f;
    if (bias.data != nullptr) v += RoundToCompute(Load(bias, i % n), compute);
    Store(c, i, v);
  }
}

}  // namespace

cudaError_t LaunchFill(cudaStream_t s, DevTensor out, int64_t n, double value) {
  if (n <= 0) return cudaGetLastError();
  if (out.dtype == MNT_DTYPE_I32) {
    FillI32Kernel<<<GridFor(n, kThreads), kThreads, 0, s>>>(
        static_cast<int32_t*>(out.data), n, static_cast<int32_t>(value));
    return cudaGetLastError();
  }
  return LaunchMap4(s, FillBody{out, static_cast<float>(value)}, n,
                    Aligned16(out.data));
}

cudaError_t LaunchConvert(cudaStream_t s, DevTensor in, DevTensor out,
                          int64_t n, MNT_ComputeMode round_to) {
  return LaunchMap4(s, ConvertBody{in, out, round_to}, n,
                    Aligned16(in.data) && Aligned16(out.data));
}

cudaError_t LaunchAdd(cudaStream_t s, DevTensor a, DevTensor b, DevTensor out,
                      int64_t n, float alpha, float beta) {
  const bool vec = Aligned16(a.data) && Aligned16(b.data) && Aligned16(out.data);
  return LaunchMap4(s, AddBody{a, b, out, alpha, beta}, n, vec);
}

cudaError_t LaunchActivationForward(cudaStream_t s, MNT_Activation act,
                                    DevTensor x, DevTensor y, int64_t n) {
  return LaunchMap4(s, ActivationForwardBody{act, x, y}, n,
                    Aligned16(x.data) && Aligned16(y.data));
}

cudaError_t LaunchActivationBackward(cudaStream_t s, MNT_Activation act,
                                     DevTensor x, DevTensor dy, DevTensor dx,
                                     int64_t n) {
  const bool vec = Aligned16(x.data) && Aligned16(dy.data) && Aligned16(dx.data);
  return LaunchMap4(s, ActivationBackwardBody{act, x, dy, dx}, n, vec);
}

cudaError_t LaunchUnscale(cudaStream_t s, const float* inv_scale, DevTensor in,
                          DevTensor out, int64_t n, float* found_inf) {
  return LaunchMap4(s, UnscaleBody{inv_scale, in, out, found_inf}, n,
                    Aligned16(in.data) && Aligned16(out.data));
}

cudaError_t LaunchSgdStep(cudaStream_t s, const StepBuffers& b,
                          const SgdCoefficients& c) {
  if (b.n <= 0) return cudaGetLastError();
  SgdKernel<<<GridFor(b.n, kThreads), kThreads, 0, s>>>(b, c);
  return cudaGetLastError();
}

cudaError_t LaunchAdamWStep(cudaStream_t s, const StepBuffers& b,
                            const AdamWCoefficients& c) {
  if (b.n > 0) {
    AdamWKernel<<<GridFor(b.n, kThreads), kThreads, 0, s>>>(b, c);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (b.step_counter != nullptr) {
    CountAppliedStepKernel<<<1, 1, 0, s>>>(b.step_counter, b.found_inf);
  }
  return cudaGetLastError();
}

cudaError_t LaunchAmpUpdateScale(cudaStream_t s, const float* found_inf,
                                 float* scale, int32_t* growth_tracker,
                                 float* inv_scale, float growth_factor,
                                 float backoff_factor, int32_t growth_interval) {
  AmpUpdateScaleKernel<<<1, 1, 0, s>>>(found_inf, scale, growth_tracker, inv_scale,
                                       growth_factor, backoff_factor,
                                       growth_interval);
  return cudaGetLastError();
}

cudaError_t LaunchClipCoefficient(cudaStream_t s, const float* norm_squared,
                                  const float* found_inf, float max_norm,
                                  float* multiplier) {
  ClipCoefficientKernel<<<1, 1, 0, s>>>(norm_squared, found_inf, max_norm, multiplier);
  return cudaGetLastError();
}

cudaError_t LaunchGemmEmptyK(cudaStream_t s, DevTensor c, int64_t m, int64_t n,
                             float beta, DevTensor bias,
                             MNT_ComputeMode compute) {
  if (m * n <= 0) return cudaGetLastError();
  GemmEmptyKKernel<<<GridFor(m * n, kThreads), kThreads, 0, s>>>(
      c, m, n, beta, bias, compute);
  return cudaGetLastError();
}

}  // namespace mnt::cuda

// FILL, CAST, ADD and the activations: 4-element map kernels (vectorised
// loads/stores when aligned), compiled per storage type and chosen once per
// launch (operands of one dtype; CAST per input/output pair; ADD with one
// operand in another dtype than the rest per pair), with the per-element
// dtype switch only for operands of otherwise mixed dtypes. Per-element
// math is plugins/backends/common's, the same functions the CPU backend runs.
#include <cuda_runtime.h>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/elementwise.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

template <typename S>
struct FillBody {
  DevTensor out;
  float value;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    const float v[4] = {value, value, value, value};
    Store4<S>(out, i, count, vec, v);
  }
};

__global__ void FillI32Kernel(int32_t* out, int64_t n, int32_t value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

template <typename SIn, typename SOut>
struct ConvertBody {
  DevTensor in, out;
  MNT_ComputeMode round_to;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float v[4];
    Load4<SIn>(in, i, count, vec, v);
    if (round_to != MNT_COMPUTE_F32) {
      for (int k = 0; k < count; ++k) v[k] = RoundToCompute(v[k], round_to);
    }
    Store4<SOut>(out, i, count, vec, v);
  }
};

// SA, SB, SO: the storage types of a, b and out.
template <typename SA, typename SB, typename SO>
struct AddBody {
  DevTensor a, b, out;
  float alpha, beta;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float x[4], y[4];
    Load4<SA>(a, i, count, vec, x);
    if (b.data != nullptr) {
      Load4<SB>(b, i, count, vec, y);
      for (int k = 0; k < count; ++k) x[k] = alpha * x[k] + beta * y[k];
    } else {
      for (int k = 0; k < count; ++k) x[k] = alpha * x[k];
    }
    Store4<SO>(out, i, count, vec, x);
  }
};

template <typename S>
struct ActivationForwardBody {
  MNT_Activation act;
  DevTensor x, y;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float v[4];
    Load4<S>(x, i, count, vec, v);
    for (int k = 0; k < count; ++k) {
      if (act == MNT_ACTIVATION_RELU) v[k] = Relu(v[k]);
      else if (act == MNT_ACTIVATION_GELU_TANH) v[k] = GeluTanh(v[k]);
    }
    Store4<S>(y, i, count, vec, v);
  }
};

template <typename S>
struct ActivationBackwardBody {
  MNT_Activation act;
  DevTensor x, dy, dx;
  __device__ void operator()(int64_t i, int count, bool vec) const {
    float xv[4], g[4];
    Load4<S>(x, i, count, vec, xv);
    Load4<S>(dy, i, count, vec, g);
    for (int k = 0; k < count; ++k) {
      if (act == MNT_ACTIVATION_RELU) g[k] = ReluBackward(xv[k], g[k]);
      else if (act == MNT_ACTIVATION_GELU_TANH) g[k] = GeluTanhBackward(xv[k], g[k]);
    }
    Store4<S>(dx, i, count, vec, g);
  }
};

}  // namespace

cudaError_t LaunchFill(cudaStream_t s, DevTensor out, int64_t n, double value) {
  if (n <= 0) return cudaSuccess;
  if (out.dtype == MNT_DTYPE_I32) {
    return Launch(FillI32Kernel, GridFor(n, kThreads), kThreads, 0, s,
                  static_cast<int32_t*>(out.data), n, static_cast<int32_t>(value));
  }
  return WithStorage(out.dtype, [&](auto storage) {
    using S = decltype(storage);
    return LaunchMap4(s, FillBody<S>{out, static_cast<float>(value)}, n, Aligned16(out.data));
  });
}

cudaError_t LaunchConvert(cudaStream_t s, DevTensor in, DevTensor out, int64_t n,
                          MNT_ComputeMode round_to) {
  const bool vec = Aligned16(in.data) && Aligned16(out.data);
  return WithStorage(in.dtype, [&](auto in_storage) {
    return WithStorage(out.dtype, [&](auto out_storage) {
      using Body = ConvertBody<decltype(in_storage), decltype(out_storage)>;
      return LaunchMap4(s, Body{in, out, round_to}, n, vec);
    });
  });
}

// One dtype for all (the common case), or the operand that differs from
// out's dtype in a type of its own: a 16-bit gradient added into an fp32
// accumulator (the trainer's master gradients) runs without a per-element
// switch. Only three different dtypes switch per element.
cudaError_t LaunchAdd(cudaStream_t s, DevTensor a, DevTensor b, DevTensor out,
                      int64_t n, float alpha, float beta) {
  const bool vec = Aligned16(a.data) && Aligned16(b.data) && Aligned16(out.data);
  if (b.data == nullptr || b.dtype == out.dtype) {
    return WithStoragePair(a.dtype, out.dtype, [&](auto sa, auto so) {
      using SO = decltype(so);
      return LaunchMap4(s, AddBody<decltype(sa), SO, SO>{a, b, out, alpha, beta}, n, vec);
    });
  }
  if (a.dtype == out.dtype) {
    return WithStoragePair(b.dtype, out.dtype, [&](auto sb, auto so) {
      using SO = decltype(so);
      return LaunchMap4(s, AddBody<SO, decltype(sb), SO>{a, b, out, alpha, beta}, n, vec);
    });
  }
  return LaunchMap4(s, AddBody<AnyStorage, AnyStorage, AnyStorage>{a, b, out, alpha, beta}, n,
                    vec);
}

Status CudaBackend::Fill(const backend::FillCall& c) {
  return Launched(c, LaunchFill(stream, Dev(c.out), c.n, c.value), "fill");
}

Status CudaBackend::Cast(const backend::CastCall& c) {
  return Launched(c, LaunchConvert(stream, Dev(c.x), Dev(c.y), c.n, MNT_COMPUTE_F32),
                  "convert");
}

Status CudaBackend::Add(const backend::AddCall& c) {
  return Launched(c, LaunchAdd(stream, Dev(c.a), Dev(c.b), Dev(c.out), c.n, c.alpha, c.beta),
                  "add");
}

Status CudaBackend::ActivationForward(const backend::ActivationForwardCall& c) {
  const DevTensor x = Dev(c.x), y = Dev(c.y);
  const bool vec = Aligned16(x.data) && Aligned16(y.data);
  const cudaError_t err =
      WithStorage(CommonDType({x.dtype, y.dtype}), [&](auto storage) {
        using S = decltype(storage);
        return LaunchMap4(stream, ActivationForwardBody<S>{c.activation, x, y}, c.n, vec);
      });
  return Launched(c, err, "activation_forward");
}

Status CudaBackend::ActivationBackward(const backend::ActivationBackwardCall& c) {
  const DevTensor x = Dev(c.x), dy = Dev(c.dy), dx = Dev(c.dx);
  const bool vec = Aligned16(x.data) && Aligned16(dy.data) && Aligned16(dx.data);
  const cudaError_t err =
      WithStorage(CommonDType({x.dtype, dy.dtype, dx.dtype}), [&](auto storage) {
        using S = decltype(storage);
        return LaunchMap4(stream, ActivationBackwardBody<S>{c.activation, x, dy, dx}, c.n,
                          vec);
      });
  return Launched(c, err, "activation_backward");
}

}  // namespace mnt::cuda

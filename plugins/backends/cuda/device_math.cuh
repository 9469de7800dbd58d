// Device-side helpers shared by the .cu files: loads/stores of any float
// dtype, specialised per storage type or switching per element (vectorised
// 4-element groups too), the 4-element map kernel of the
// elementwise ops, block reductions.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_DEVICE_MATH_CUH_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_DEVICE_MATH_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/backends/common/storage_types.h"
#include "plugins/backends/common/tensor_access.h"
#include "plugins/backends/cuda/launch.h"

namespace mnt::cuda {

// Element i as fp32 / stored rounded to nearest even, with the conversion of
// storage type S (storage_types.h) compiled in; S = AnyStorage switches on
// t.dtype per element.
template <typename S>
__device__ inline float Load(const DevTensor& t, int64_t i) {
  return S::Load(t.data, t.dtype, i);
}
template <typename S>
__device__ inline void Store(const DevTensor& t, int64_t i, float v) {
  S::Store(t.data, t.dtype, i, v);
}
__device__ inline float Load(const DevTensor& t, int64_t i) {
  return Load<AnyStorage>(t, i);
}
__device__ inline void Store(const DevTensor& t, int64_t i, float v) {
  Store<AnyStorage>(t, i, v);
}

// Elements [i, i + count) (count <= 4) into v; one 16- or 8-byte load when
// `vec` (every base pointer 16-byte aligned) and the group is full.
template <typename S>
__device__ inline void Load4(const DevTensor& t, int64_t i, int count, bool vec,
                             float v[4]) {
  if (vec && count == 4) {
    const MNT_DType dtype = S::kDType != MNT_DTYPE_INVALID ? S::kDType : t.dtype;
    if (dtype == MNT_DTYPE_F32) {
      const float4 q = *reinterpret_cast<const float4*>(
          static_cast<const float*>(t.data) + i);
      v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
      return;
    }
    const uint2 q = *reinterpret_cast<const uint2*>(
        static_cast<const uint16_t*>(t.data) + i);
    const uint16_t h[4] = {static_cast<uint16_t>(q.x & 0xffffu),
                           static_cast<uint16_t>(q.x >> 16),
                           static_cast<uint16_t>(q.y & 0xffffu),
                           static_cast<uint16_t>(q.y >> 16)};
    for (int k = 0; k < 4; ++k) {
      v[k] = dtype == MNT_DTYPE_F16 ? HalfBitsToFloat(h[k])
                                    : Bf16BitsToFloat(h[k]);
    }
    return;
  }
  // A fixed trip count with a guard, not k < count: the group's arrays stay
  // in registers instead of the stack (dynamic indexing needs local memory).
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k < count) v[k] = Load<S>(t, i + k);
  }
}

template <typename S>
__device__ inline void Store4(const DevTensor& t, int64_t i, int count,
                              bool vec, const float v[4]) {
  if (vec && count == 4) {
    const MNT_DType dtype = S::kDType != MNT_DTYPE_INVALID ? S::kDType : t.dtype;
    // if/else, not an early return: with an fp32 storage type the 16-bit
    // branch is dead code, which nvcc warns about ("loop is not reachable")
    // after a return but not in an else.
    if (dtype == MNT_DTYPE_F32) {
      *reinterpret_cast<float4*>(static_cast<float*>(t.data) + i) =
          make_float4(v[0], v[1], v[2], v[3]);
    } else {
      uint16_t h[4];
      for (int k = 0; k < 4; ++k) {
        h[k] = dtype == MNT_DTYPE_F16 ? FloatToHalfBits(v[k])
                                      : FloatToBf16Bits(v[k]);
      }
      uint2 q;
      q.x = static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
      q.y = static_cast<uint32_t>(h[2]) | (static_cast<uint32_t>(h[3]) << 16);
      *reinterpret_cast<uint2*>(static_cast<uint16_t*>(t.data) + i) = q;
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k < count) Store<S>(t, i + k, v[k]);
  }
}

__device__ inline void Load4(const DevTensor& t, int64_t i, int count, bool vec,
                             float v[4]) {
  Load4<AnyStorage>(t, i, count, vec, v);
}
__device__ inline void Store4(const DevTensor& t, int64_t i, int count,
                              bool vec, const float v[4]) {
  Store4<AnyStorage>(t, i, count, vec, v);
}

// Element k of channel ch in x viewed as [n, c, inner].
__device__ inline int64_t ChannelElement(int64_t k, int64_t ch, int64_t c,
                                         int64_t inner) {
  return ((k / inner) * c + ch) * inner + k % inner;
}

// Each thread handles groups of 4 consecutive elements (grid-stride):
// body(i, count, vec) for elements [i, i + count).
template <typename Body>
__global__ void Map4Kernel(Body body, int64_t n, bool vec) {
  const int64_t stride = 4ll * gridDim.x * blockDim.x;
  for (int64_t i = 4ll * (blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += stride) {
    const int count = n - i < 4 ? static_cast<int>(n - i) : 4;
    body(i, count, vec);
  }
}

// `vec`: every buffer the body touches is 16-byte aligned.
template <typename Body>
cudaError_t LaunchMap4(cudaStream_t s, Body body, int64_t n, bool vec) {
  if (n <= 0) return cudaSuccess;
  return Launch(Map4Kernel<Body>, GridFor((n + 3) / 4, kThreads), kThreads, 0, s, body, n,
                vec);
}

// Block-wide reduction with a fixed combination order (deterministic);
// every thread gets the result. blockDim.x must be a multiple of 32, <= 1024.
template <typename T, typename Combine>
__device__ T BlockReduce(T v, Combine combine, T identity) {
  __shared__ T warp_results[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  __syncthreads();  // warp_results may still be read from a previous call
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? warp_results[lane] : identity;
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};

// max that lets NaN win, as torch.max.
struct NanMaxOp {
  __device__ double operator()(double a, double b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
  __device__ float operator()(float a, float b) const {
    return fmaxf(a, b);  // softmax row max: NaN ignored, as std::max on CPU
  }
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_DEVICE_MATH_CUH_

// ATTENTION_FORWARD/BACKWARD. Where the call goes (attention_route.h): 16-bit
// storage to cuDNN's fused SDPA (attention_cudnn.cc), fp32 storage to
// cuBLASLt GEMMs with row kernels between them (attention_gemm.cu), as the
// backend's `attention` option allows and each can run the call; otherwise
// (mixed dtypes, attention=fallback, a refused shape), and as the GPU
// reference, these tiled flash-style kernels (bookkeeping and
// online softmax in attention_tiles.h): compiled per storage type (operands
// of one dtype; the per-element dtype switch otherwise), fp32 math,
// K/V (and Q/dY) tiles in shared memory, all threads of a block busy in
// every phase, deterministic (no atomics, fixed summation orders).
//   forward:  per (batch*head, query tile), key tiles streamed, running
//             max/sum per row; saves the row logsumexp.
//   backward: delta = dy . y per row; per key tile, dK and dV gathered over
//             the query tiles that see it; per query tile, dQ gathered over
//             its key tiles. Probabilities recomputed from the logsumexp.
#include <cuda_runtime.h>
#include <math.h>

#include <initializer_list>
#include <string>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cuda/attention_cudnn.h"
#include "plugins/backends/cuda/attention_gemm.h"
#include "plugins/backends/cuda/attention_notice.h"
#include "plugins/backends/cuda/attention_route.h"
#include "plugins/backends/cuda/attention_tiles.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

constexpr int kAttentionThreads = 128;
constexpr int kWarps = kAttentionThreads / 32;
// 48 KiB: the dynamic shared memory a kernel gets without opting in; the
// tile edge is chosen to fit it (attention_tiles.h).
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// Element offsets of row ti of batch bi: packed qkv [B,T,3C], y/dy [B,T,C].
__device__ inline int64_t QkvRow(const AttentionDims& a, int64_t bi, int64_t ti) {
  return (bi * a.t + ti) * 3 * a.c;
}
__device__ inline int64_t OutRow(const AttentionDims& a, int64_t bi, int64_t ti) {
  return (bi * a.t + ti) * a.c;
}

// dst [rows][PaddedRow(d)] <- d elements at offset(r) of each row r; the
// block's threads read consecutive elements of a row (coalesced).
template <typename S, typename Offset>
__device__ void LoadTile(float* dst, const DevTensor& src, Offset offset, int64_t rows,
                         int64_t d) {
  const int64_t ld = PaddedRow(d);
  for (int64_t i = threadIdx.x; i < rows * d; i += blockDim.x) {
    const int64_t r = i / d, e = i % d;
    dst[r * ld + e] = Load<S>(src, offset(r) + e);
  }
}

__device__ inline void ZeroShared(float* dst, int64_t n) {
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = 0.0f;
}

__device__ inline float SharedDot(const float* a, const float* b, int64_t d) {
  float acc = 0.0f;
  for (int64_t e = 0; e < d; ++e) acc += a[e] * b[e];
  return acc;
}

// Butterfly reductions: every lane ends with the same bits.
__device__ inline float WarpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}
__device__ inline float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Grid: x = batch*head, y = query tile. Shared: Q, K, V, O tiles [tile][D+1],
// scores [tile][tile], per-row m, l, rescale factor.
template <typename S>
__global__ void AttentionForwardKernel(AttentionDims a, int64_t tile, DevTensor qkv,
                                       DevTensor y, float* lse) {
  extern __shared__ float smem[];
  const int64_t ld = PaddedRow(a.d);
  float* qs = smem;
  float* ks = qs + tile * ld;
  float* vs = ks + tile * ld;
  float* os = vs + tile * ld;
  float* ss = os + tile * ld;
  float* row_m = ss + tile * tile;
  float* row_l = row_m + tile;
  float* row_alpha = row_l + tile;
  const int64_t bi = blockIdx.x / a.h, hi = blockIdx.x % a.h, head = hi * a.d;
  const int64_t q0 = blockIdx.y * tile;
  const int64_t rows = TileRows(q0, tile, a.t), end = KeysEnd(q0, rows, a.t, a.causal);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  LoadTile<S>(qs, qkv, [&](int64_t r) { return QkvRow(a, bi, q0 + r) + head; }, rows, a.d);
  ZeroShared(os, rows * ld);
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    row_m[r] = -INFINITY;
    row_l[r] = 0.0f;
  }
  for (int64_t k0 = 0; k0 < end; k0 += tile) {
    const int64_t cols = TileRows(k0, tile, end);
    __syncthreads();  // the previous key tile is used up
    LoadTile<S>(ks, qkv, [&](int64_t r) { return QkvRow(a, bi, k0 + r) + a.c + head; }, cols, a.d);
    LoadTile<S>(vs, qkv, [&](int64_t r) { return QkvRow(a, bi, k0 + r) + 2 * a.c + head; }, cols,
             a.d);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * cols; i += blockDim.x) {
      const int64_t r = i / cols, c = i % cols;
      ss[r * tile + c] = KeyVisible(q0 + r, k0 + c, a.causal)
                             ? a.scale * SharedDot(qs + r * ld, ks + c * ld, a.d)
                             : -INFINITY;
    }
    __syncthreads();
    for (int64_t r = warp; r < rows; r += kWarps) {  // one warp per row
      float tile_max = -INFINITY;
      for (int64_t c = lane; c < cols; c += 32) tile_max = fmaxf(tile_max, ss[r * tile + c]);
      tile_max = WarpMax(tile_max);
      float m = row_m[r];
      const float alpha = OnlineSoftmaxRescale(&m, tile_max);
      float sum = 0.0f;
      for (int64_t c = lane; c < cols; c += 32) {
        const float p = OnlineSoftmaxWeight(ss[r * tile + c], m);
        ss[r * tile + c] = p;
        sum += p;
      }
      sum = WarpSum(sum);
      if (lane == 0) {
        row_m[r] = m;
        row_l[r] = row_l[r] * alpha + sum;
        row_alpha[r] = alpha;
      }
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * a.d; i += blockDim.x) {
      const int64_t r = i / a.d, e = i % a.d;
      float acc = os[r * ld + e] * row_alpha[r];
      for (int64_t c = 0; c < cols; ++c) acc += ss[r * tile + c] * vs[c * ld + e];
      os[r * ld + e] = acc;
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < rows * a.d; i += blockDim.x) {
    const int64_t r = i / a.d, e = i % a.d;
    Store<S>(y, OutRow(a, bi, q0 + r) + head + e, os[r * ld + e] / row_l[r]);
  }
  const int64_t stats = (bi * a.h + hi) * a.t + q0;  // lse [B,H,T]
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    lse[stats + r] = OnlineSoftmaxLse(row_m[r], row_l[r]);
  }
}

// delta[row] = dy . y of each (batch, head, position) row, one warp a row.
template <typename S>
__global__ void AttentionDeltaKernel(AttentionDims a, DevTensor dy, DevTensor y,
                                     float* delta) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t rows = a.b * a.h * a.t;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + warp; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
    const int64_t ti = row % a.t, hi = (row / a.t) % a.h, bi = row / (a.t * a.h);
    const int64_t off = OutRow(a, bi, ti) + hi * a.d;
    float part = 0.0f;
    for (int64_t e = lane; e < a.d; e += 32) part += Load<S>(dy, off + e) * Load<S>(y, off + e);
    part = WarpSum(part);
    if (lane == 0) delta[row] = part;
  }
}

// p and dS of (query q0 + r, key k0 + c) from tiles in shared memory.
struct ScoreGrad {
  float p, ds;
};
__device__ inline ScoreGrad ScoreAndGrad(const AttentionDims& a, const float* q,
                                         const float* k, const float* v, const float* g,
                                         float row_lse, float row_delta, bool visible) {
  if (!visible) return ScoreGrad{0.0f, 0.0f};
  const float p = expf(a.scale * SharedDot(q, k, a.d) - row_lse);
  return ScoreGrad{p, AttentionScoreGrad(p, SharedDot(g, v, a.d), row_delta)};
}

// Grid: x = batch*head, y = key tile. dK = scale * sum dS^T Q, dV = sum P^T dY
// over the query tiles that see the key tile, in order. Shared: K, V, dK,
// dV, Q, dY tiles [tile][D+1], P and dS [tile][tile], per-row lse, delta.
template <typename S>
__global__ void AttentionKeyPassKernel(AttentionDims a, int64_t tile, DevTensor dy,
                                       DevTensor qkv, const float* lse, const float* delta,
                                       DevTensor dqkv) {
  extern __shared__ float smem[];
  const int64_t ld = PaddedRow(a.d);
  float* ks = smem;
  float* vs = ks + tile * ld;
  float* dks = vs + tile * ld;
  float* dvs = dks + tile * ld;
  float* qs = dvs + tile * ld;
  float* gs = qs + tile * ld;
  float* ps = gs + tile * ld;
  float* dss = ps + tile * tile;
  float* row_lse = dss + tile * tile;
  float* row_delta = row_lse + tile;
  const int64_t bi = blockIdx.x / a.h, hi = blockIdx.x % a.h, head = hi * a.d;
  const int64_t k0 = blockIdx.y * tile, cols = TileRows(k0, tile, a.t);
  const int64_t stats = (bi * a.h + hi) * a.t;

  LoadTile<S>(ks, qkv, [&](int64_t r) { return QkvRow(a, bi, k0 + r) + a.c + head; }, cols, a.d);
  LoadTile<S>(vs, qkv, [&](int64_t r) { return QkvRow(a, bi, k0 + r) + 2 * a.c + head; }, cols,
           a.d);
  ZeroShared(dks, cols * ld);
  ZeroShared(dvs, cols * ld);
  for (int64_t q0 = FirstQueryTile(k0, tile, a.causal); q0 < a.t; q0 += tile) {
    const int64_t rows = TileRows(q0, tile, a.t);
    __syncthreads();  // the previous query tile is used up
    LoadTile<S>(qs, qkv, [&](int64_t r) { return QkvRow(a, bi, q0 + r) + head; }, rows, a.d);
    LoadTile<S>(gs, dy, [&](int64_t r) { return OutRow(a, bi, q0 + r) + head; }, rows, a.d);
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      row_lse[r] = lse[stats + q0 + r];
      row_delta[r] = delta[stats + q0 + r];
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * cols; i += blockDim.x) {
      const int64_t r = i / cols, c = i % cols;
      const ScoreGrad sg =
          ScoreAndGrad(a, qs + r * ld, ks + c * ld, vs + c * ld, gs + r * ld, row_lse[r],
                       row_delta[r], KeyVisible(q0 + r, k0 + c, a.causal));
      ps[r * tile + c] = sg.p;
      dss[r * tile + c] = sg.ds;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < cols * a.d; i += blockDim.x) {
      const int64_t c = i / a.d, e = i % a.d;
      float acc_k = dks[c * ld + e], acc_v = dvs[c * ld + e];
      for (int64_t r = 0; r < rows; ++r) {
        acc_k += dss[r * tile + c] * qs[r * ld + e];
        acc_v += ps[r * tile + c] * gs[r * ld + e];
      }
      dks[c * ld + e] = acc_k;
      dvs[c * ld + e] = acc_v;
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < cols * a.d; i += blockDim.x) {
    const int64_t c = i / a.d, e = i % a.d;
    const int64_t ko = QkvRow(a, bi, k0 + c) + a.c + head + e;
    Store<S>(dqkv, ko, a.scale * dks[c * ld + e]);
    Store<S>(dqkv, ko + a.c, dvs[c * ld + e]);
  }
}

// Grid: x = batch*head, y = query tile. dQ = scale * sum dS K over the key
// tiles the query tile sees, in order. Shared: Q, dY, K, V, dQ tiles
// [tile][D+1], dS [tile][tile], per-row lse, delta.
template <typename S>
__global__ void AttentionQueryPassKernel(AttentionDims a, int64_t tile, DevTensor dy,
                                         DevTensor qkv, const float* lse, const float* delta,
                                         DevTensor dqkv) {
  extern __shared__ float smem[];
  const int64_t ld = PaddedRow(a.d);
  float* qs = smem;
  float* gs = qs + tile * ld;
  float* ks = gs + tile * ld;
  float* vs = ks + tile * ld;
  float* dqs = vs + tile * ld;
  float* dss = dqs + tile * ld;
  float* row_lse = dss + tile * tile;
  float* row_delta = row_lse + tile;
  const int64_t bi = blockIdx.x / a.h, hi = blockIdx.x % a.h, head = hi * a.d;
  const int64_t q0 = blockIdx.y * tile;
  const int64_t rows = TileRows(q0, tile, a.t), end = KeysEnd(q0, rows, a.t, a.causal);
  const int64_t stats = (bi * a.h + hi) * a.t + q0;

  LoadTile<S>(qs, qkv, [&](int64_t r) { return QkvRow(a, bi, q0 + r) + head; }, rows, a.d);
  LoadTile<S>(gs, dy, [&](int64_t r) { return OutRow(a, bi, q0 + r) + head; }, rows, a.d);
  ZeroShared(dqs, rows * ld);
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    row_lse[r] = lse[stats + r];
    row_delta[r] = delta[stats + r];
  }
  for (int64_t k0 = 0; k0 < end; k0 += tile) {
    const int64_t cols = TileRows(k0, tile, end);
    __syncthreads();  // the previous key tile is used up
    LoadTile<S>(ks, qkv, [&](int64_t r) { return QkvRow(a, bi, k0 + r) + a.c + head; }, cols, a.d);
    LoadTile<S>(vs, qkv, [&](int64_t r) { return QkvRow(a, bi, k0 + r) + 2 * a.c + head; }, cols,
             a.d);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * cols; i += blockDim.x) {
      const int64_t r = i / cols, c = i % cols;
      dss[r * tile + c] =
          ScoreAndGrad(a, qs + r * ld, ks + c * ld, vs + c * ld, gs + r * ld, row_lse[r],
                       row_delta[r], KeyVisible(q0 + r, k0 + c, a.causal))
              .ds;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * a.d; i += blockDim.x) {
      const int64_t r = i / a.d, e = i % a.d;
      float acc = dqs[r * ld + e];
      for (int64_t c = 0; c < cols; ++c) acc += dss[r * tile + c] * ks[c * ld + e];
      dqs[r * ld + e] = acc;
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < rows * a.d; i += blockDim.x) {
    const int64_t r = i / a.d, e = i % a.d;
    Store<S>(dqkv, QkvRow(a, bi, q0 + r) + head + e, a.scale * dqs[r * ld + e]);
  }
}

// The tile edge for a kernel whose shared memory is `bytes`, and its grid.
template <typename Bytes>
Status Plan(const backend::TypedCall& call, const AttentionDims& s, const char* kernel,
            Bytes bytes, int64_t* tile, dim3* grid, size_t* shared) {
  *tile = PickAttentionTile(s.d, kDefaultSharedBytes, bytes);
  if (*tile == 0) {
    return sdk::Unimplemented(sdk::Format(
        "%s: head dim D=%lld is too large for the cuda fallback attention (%s needs "
        "%zu bytes of shared memory for a single row, limit %zu)",
        call.op_name(), (long long)s.d, kernel, bytes(1, s.d), kDefaultSharedBytes));
  }
  const int64_t tiles = (s.t + *tile - 1) / *tile, heads = s.b * s.h;
  if (tiles > 65535 || heads > 0x7fffffff) {
    return sdk::Unimplemented(sdk::Format(
        "%s: B*H=%lld and T=%lld exceed the cuda fallback attention's grid (%s: %lld "
        "tiles of %lld rows, at most 65535)",
        call.op_name(), (long long)heads, (long long)s.t, kernel, (long long)tiles,
        (long long)*tile));
  }
  *grid = dim3(static_cast<unsigned>(heads), static_cast<unsigned>(tiles));
  *shared = bytes(*tile, s.d);
  return Status::Ok();
}

// Mixed storage: cuDNN and the GEMM path both take one dtype; said once
// per shape, as the other fallbacks.
void SayMixedDtypes(CudaBackend& b, const AttentionDims& s, const AttentionRoute& route,
                    std::initializer_list<const Operand*> io) {
  if (route.reason != FallbackReason::kMixedDtypes || s.b * s.h * s.t == 0) return;
  SayAttentionFallback(b, s, route.reason, (**io.begin())->dtype, [&] {
    std::string dtypes;
    for (const Operand* o : io) {
      dtypes += (dtypes.empty() ? "" : ", ") + o->label.str() + " " +
                sdk::DTypeName((*o)->dtype);
    }
    return "cuDNN SDPA and the GEMM path take operands of one dtype, this call has " +
           dtypes;
  });
}

}  // namespace

Status CudaBackend::AttentionForward(const backend::AttentionForwardCall& a) {
  const AttentionDims& s = a.shape;
  const AttentionRoute route = RouteAttention(options.attention, {a.qkv->dtype, a.y->dtype});
  bool ran = false;
  if (route.path == AttentionPath::kCudnn) {
    MNT_RETURN_IF_ERROR(MaybeCudnnAttentionForward(*this, *a.op, s, a.qkv, a.y, a.lse, &ran));
  } else if (route.path == AttentionPath::kGemm) {
    MNT_RETURN_IF_ERROR(MaybeGemmAttentionForward(*this, a, &ran));
  }
  if (ran) return Status::Ok();
  SayMixedDtypes(*this, s, route, {&a.qkv, &a.y});
  if (s.b * s.h * s.t == 0) return Status::Ok();
  int64_t tile;
  dim3 grid;
  size_t shared;
  MNT_RETURN_IF_ERROR(
      Plan(a, s, "attention_forward", ForwardSharedBytes, &tile, &grid, &shared));
  const DevTensor qkv = Dev(a.qkv), y = Dev(a.y);
  const cudaError_t err = WithStorage(CommonDType({qkv.dtype, y.dtype}), [&](auto storage) {
    return Launch(AttentionForwardKernel<decltype(storage)>, grid, kAttentionThreads, shared,
                  stream, s, tile, qkv, y, a.lse.f32());
  });
  return Launched(a, err, "attention_forward");
}

Status CudaBackend::AttentionBackward(const backend::AttentionBackwardCall& a) {
  const AttentionDims& s = a.shape;
  const AttentionRoute route = RouteAttention(
      options.attention, {a.dy->dtype, a.qkv->dtype, a.y->dtype, a.dqkv->dtype});
  bool ran = false;
  if (route.path == AttentionPath::kCudnn) {
    MNT_RETURN_IF_ERROR(MaybeCudnnAttentionBackward(*this, *a.op, s, a.dy, a.qkv, a.y, a.lse,
                                                    a.dqkv, &ran));
  } else if (route.path == AttentionPath::kGemm) {
    MNT_RETURN_IF_ERROR(MaybeGemmAttentionBackward(*this, a, &ran));
  }
  if (ran) return Status::Ok();
  SayMixedDtypes(*this, s, route, {&a.dy, &a.qkv, &a.y, &a.dqkv});
  const int64_t rows = s.b * s.h * s.t;
  if (rows == 0) return Status::Ok();
  int64_t key_tile, query_tile;
  dim3 key_grid, query_grid;
  size_t key_shared, query_shared;
  MNT_RETURN_IF_ERROR(Plan(a, s, "attention_key_pass", KeyPassSharedBytes, &key_tile,
                           &key_grid, &key_shared));
  MNT_RETURN_IF_ERROR(Plan(a, s, "attention_query_pass", QueryPassSharedBytes, &query_tile,
                           &query_grid, &query_shared));
  Scratch delta(*this);  // dy . y per row
  MNT_RETURN_IF_ERROR(delta.Allocate(sizeof(float) * rows));
  float* d = static_cast<float*>(delta.data());
  const DevTensor dy = Dev(a.dy), y = Dev(a.y), qkv = Dev(a.qkv), dqkv = Dev(a.dqkv);
  const float* lse = a.lse.f32();
  const cudaError_t delta_err = WithStorage(CommonDType({dy.dtype, y.dtype}), [&](auto storage) {
    return Launch(AttentionDeltaKernel<decltype(storage)>, GridFor(rows, kWarps),
                  kAttentionThreads, 0, stream, s, dy, y, d);
  });
  MNT_RETURN_IF_ERROR(Launched(a, delta_err, "attention_delta"));
  // Both passes read dy and qkv and write dqkv: one storage type for the three.
  const MNT_DType pass_dtype = CommonDType({dy.dtype, qkv.dtype, dqkv.dtype});
  const cudaError_t key_err = WithStorage(pass_dtype, [&](auto storage) {
    return Launch(AttentionKeyPassKernel<decltype(storage)>, key_grid, kAttentionThreads,
                  key_shared, stream, s, key_tile, dy, qkv, lse, static_cast<const float*>(d),
                  dqkv);
  });
  MNT_RETURN_IF_ERROR(Launched(a, key_err, "attention_key_pass"));
  const cudaError_t query_err = WithStorage(pass_dtype, [&](auto storage) {
    return Launch(AttentionQueryPassKernel<decltype(storage)>, query_grid, kAttentionThreads,
                  query_shared, stream, s, query_tile, dy, qkv, lse,
                  static_cast<const float*>(d), dqkv);
  });
  return Launched(a, query_err, "attention_query_pass");
}

}  // namespace mnt::cuda

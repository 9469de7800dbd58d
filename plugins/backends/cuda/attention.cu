// ATTENTION_FORWARD/BACKWARD. cuDNN's fused SDPA runs where the backend's
// `attention` option and the call allow it (attention_cudnn.cc); otherwise,
// and as the GPU reference, these kernels: one block per query row forward,
// probabilities recomputed from the saved logsumexp backward, dk/dv gathered
// per key row. Deterministic (no atomics); fp32 math.
#include <cuda_runtime.h>
#include <math.h>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cuda/attention_cudnn.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

constexpr int kAttentionThreads = 128;
// 48 KiB: the dynamic shared memory a kernel gets without opting in.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// Offsets of the packed [B,T,3C] rows and [B,T,C] rows (head hi's columns).
__device__ inline int64_t QOffset(const AttentionDims& a, int64_t bi, int64_t ti,
                                  int64_t hi) {
  return (bi * a.t + ti) * 3 * a.c + hi * a.d;
}
__device__ inline int64_t YOffset(const AttentionDims& a, int64_t bi, int64_t ti,
                                  int64_t hi) {
  return (bi * a.t + ti) * a.c + hi * a.d;
}

// Dot product of a shared-memory vector with d elements of a tensor.
__device__ inline float DotShared(const float* s, const DevTensor& t, int64_t off,
                                  int64_t d) {
  float acc = 0.0f;
  for (int64_t e = 0; e < d; ++e) acc += s[e] * Load(t, off + e);
  return acc;
}

// One block per (b, h, query row); shared: q [d], scores [t].
__global__ void AttentionForwardKernel(AttentionDims a, DevTensor qkv, DevTensor y,
                                       float* lse) {
  extern __shared__ float smem[];
  float* q = smem;
  float* prob = smem + a.d;
  const int64_t row = blockIdx.x;  // (bi * h + hi) * t + ti: lse's layout
  const int64_t ti = row % a.t, hi = (row / a.t) % a.h, bi = row / (a.t * a.h);
  const int64_t qo = QOffset(a, bi, ti, hi);
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) q[e] = Load(qkv, qo + e);
  __syncthreads();
  const int64_t n = a.causal ? ti + 1 : a.t;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float s = a.scale * DotShared(q, qkv, QOffset(a, bi, j, hi) + a.c, a.d);
    prob[j] = s;
    m = fmaxf(m, s);
  }
  m = BlockReduce(m, NanMaxOp(), -INFINITY);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float p = expf(prob[j] - m);
    prob[j] = p;
    sum += p;
  }
  sum = BlockReduce(sum, SumOp(), 0.0f);
  __syncthreads();
  const float inv = 1.0f / sum;
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      acc += prob[j] * Load(qkv, QOffset(a, bi, j, hi) + 2 * a.c + e);
    }
    Store(y, YOffset(a, bi, ti, hi) + e, acc * inv);
  }
  if (threadIdx.x == 0) lse[row] = m + logf(sum);
}

// dq of one query row, plus delta = dy . y of that row for the dk/dv pass.
// Shared: q [d], dy [d], dscore [t].
__global__ void AttentionBackwardQueryKernel(AttentionDims a, DevTensor dy,
                                             DevTensor qkv, DevTensor y,
                                             const float* lse, DevTensor dqkv,
                                             float* delta) {
  extern __shared__ float smem[];
  float* q = smem;
  float* g = smem + a.d;
  float* ds = smem + 2 * a.d;
  const int64_t row = blockIdx.x;
  const int64_t ti = row % a.t, hi = (row / a.t) % a.h, bi = row / (a.t * a.h);
  const int64_t qo = QOffset(a, bi, ti, hi), yo = YOffset(a, bi, ti, hi);
  float part = 0.0f;
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
    q[e] = Load(qkv, qo + e);
    g[e] = Load(dy, yo + e);
    part += g[e] * Load(y, yo + e);
  }
  const float dy_dot_y = BlockReduce(part, SumOp(), 0.0f);  // syncs q, g too
  const float row_lse = lse[row];
  const int64_t n = a.causal ? ti + 1 : a.t;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const int64_t ko = QOffset(a, bi, j, hi) + a.c;
    const float p = expf(a.scale * DotShared(q, qkv, ko, a.d) - row_lse);
    ds[j] = AttentionScoreGrad(p, DotShared(g, qkv, ko + a.c, a.d), dy_dot_y);
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n; ++j) acc += ds[j] * Load(qkv, QOffset(a, bi, j, hi) + a.c + e);
    Store(dqkv, qo + e, a.scale * acc);
  }
  if (threadIdx.x == 0) delta[row] = dy_dot_y;
}

// dk and dv of one key row: gathers over the queries that see it.
// Shared: k [d], v [d], prob [t], dscore [t].
__global__ void AttentionBackwardKeyKernel(AttentionDims a, DevTensor dy,
                                           DevTensor qkv, const float* lse,
                                           const float* delta, DevTensor dqkv) {
  extern __shared__ float smem[];
  float* k = smem;
  float* v = smem + a.d;
  float* prob = smem + 2 * a.d;
  float* ds = prob + a.t;
  const int64_t key = blockIdx.x;
  const int64_t j = key % a.t, hi = (key / a.t) % a.h, bi = key / (a.t * a.h);
  const int64_t ko = QOffset(a, bi, j, hi) + a.c;
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
    k[e] = Load(qkv, ko + e);
    v[e] = Load(qkv, ko + a.c + e);
  }
  __syncthreads();
  const int64_t first = a.causal ? j : 0;
  const int64_t stats = (bi * a.h + hi) * a.t;
  for (int64_t i = first + threadIdx.x; i < a.t; i += blockDim.x) {
    const float p = expf(a.scale * DotShared(k, qkv, QOffset(a, bi, i, hi), a.d) -
                         lse[stats + i]);
    prob[i] = p;
    ds[i] = AttentionScoreGrad(p, DotShared(v, dy, YOffset(a, bi, i, hi), a.d),
                               delta[stats + i]);
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
    float dk = 0.0f, dv = 0.0f;
    for (int64_t i = first; i < a.t; ++i) {
      dk += ds[i] * Load(qkv, QOffset(a, bi, i, hi) + e);
      dv += prob[i] * Load(dy, YOffset(a, bi, i, hi) + e);
    }
    Store(dqkv, ko + e, a.scale * dk);
    Store(dqkv, ko + a.c + e, dv);
  }
}

size_t AttentionForwardShared(const AttentionDims& a) {
  return sizeof(float) * (a.d + a.t);
}
size_t AttentionQueryShared(const AttentionDims& a) {
  return sizeof(float) * (2 * a.d + a.t);
}
size_t AttentionKeyShared(const AttentionDims& a) {
  return sizeof(float) * (2 * a.d + 2 * a.t);
}

// The fallback kernels keep a T-long row of probabilities and of score
// gradients in shared memory; shapes over the default 48 KiB are refused.
Status FallbackFits(const backend::TypedCall& call, const AttentionDims& s) {
  const size_t bytes = AttentionKeyShared(s);  // the largest of the three kernels
  if (bytes <= kDefaultSharedBytes) return Status::Ok();
  return sdk::Unimplemented(sdk::Format(
      "%s: T=%lld, D=%lld needs %zu bytes of shared memory in the cuda "
      "fallback attention kernels (limit %zu)",
      call.op_name(), (long long)s.t, (long long)s.d, bytes, kDefaultSharedBytes));
}

}  // namespace

Status CudaBackend::AttentionForward(const backend::AttentionForwardCall& a) {
  const AttentionDims& s = a.shape;
  bool ran;
  MNT_RETURN_IF_ERROR(MaybeCudnnAttentionForward(*this, *a.op, s, a.qkv, a.y, a.lse, &ran));
  if (ran) return Status::Ok();
  MNT_RETURN_IF_ERROR(FallbackFits(a, s));
  const int64_t rows = s.b * s.h * s.t;
  if (rows == 0) return Status::Ok();
  AttentionForwardKernel<<<static_cast<unsigned>(rows), kAttentionThreads,
                           AttentionForwardShared(s), stream>>>(s, Dev(a.qkv), Dev(a.y),
                                                                a.lse.f32());
  return Launched(a, "attention_forward");
}

Status CudaBackend::AttentionBackward(const backend::AttentionBackwardCall& a) {
  const AttentionDims& s = a.shape;
  bool ran;
  MNT_RETURN_IF_ERROR(MaybeCudnnAttentionBackward(*this, *a.op, s, a.dy, a.qkv, a.y, a.lse,
                                                  a.dqkv, &ran));
  if (ran) return Status::Ok();
  MNT_RETURN_IF_ERROR(FallbackFits(a, s));
  const int64_t rows = s.b * s.h * s.t;
  if (rows == 0) return Status::Ok();
  Scratch delta(*this);  // dy . y per row
  MNT_RETURN_IF_ERROR(delta.Allocate(sizeof(float) * rows));
  float* d = static_cast<float*>(delta.data());
  AttentionBackwardQueryKernel<<<static_cast<unsigned>(rows), kAttentionThreads,
                                 AttentionQueryShared(s), stream>>>(
      s, Dev(a.dy), Dev(a.qkv), Dev(a.y), a.lse.f32(), Dev(a.dqkv), d);
  MNT_RETURN_IF_ERROR(Launched(a, "attention_backward"));
  AttentionBackwardKeyKernel<<<static_cast<unsigned>(rows), kAttentionThreads,
                               AttentionKeyShared(s), stream>>>(
      s, Dev(a.dy), Dev(a.qkv), a.lse.f32(), d, Dev(a.dqkv));
  return Launched(a, "attention_backward");
}

}  // namespace mnt::cuda

// Layer kernels: attention (the fallback path and GPU reference: one block
// per query row forward, recomputed probabilities backward), 2-D pooling and
// batch norm. Everything is deterministic: no atomics, every sum runs in a
// fixed order (gathers instead of scatters in the backward passes).
// Attention math is fp32; batch-norm statistics accumulate in double.
#include <cuda_runtime.h>
#include <math.h>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/kernels.h"

namespace mnt::cuda {
namespace {

constexpr int kAttentionThreads = 128;

// ---- Attention ---------------------------------------------------------------

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

// ---- Pooling -------------------------------------------------------------------

struct PlaneLoader {
  DevTensor t;
  int64_t base;
  __device__ float operator()(int64_t i) const { return Load(t, base + i); }
};

__global__ void PoolForwardKernel(PoolGeometry g, MNT_PoolKind kind, int64_t planes,
                                  DevTensor x, DevTensor y) {
  const int64_t total = planes * g.p * g.q;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = idx % g.q, p = (idx / g.q) % g.p, plane = idx / (g.p * g.q);
    const PlaneLoader load{x, plane * g.h * g.w};
    const PoolWindow win = PoolWindowAt(g, p, q);
    float out;
    if (kind == MNT_POOL_MAX) {
      out = load(PoolArgMax(load, g.w, win));
    } else {
      double sum = 0.0;
      for (int64_t i = win.h0; i < win.h1; ++i) {
        for (int64_t j = win.w0; j < win.w1; ++j) sum += load(i * g.w + j);
      }
      out = static_cast<float>(sum / static_cast<double>(win.divisor));
    }
    Store(y, idx, out);
  }
}

// One thread per input element gathers from the windows covering it, in the
// CPU reference's (p, q) order.
__global__ void PoolBackwardKernel(PoolGeometry g, MNT_PoolKind kind, int64_t planes,
                                   DevTensor dy, DevTensor x, DevTensor dx) {
  const int64_t total = planes * g.h * g.w;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t iw = idx % g.w, ih = (idx / g.w) % g.h, plane = idx / (g.h * g.w);
    const PlaneLoader load{x, plane * g.h * g.w};
    int64_t p0, p1, q0, q1;
    PoolCoveringRange(ih, g.window_h, g.stride_h, g.pad_h, g.p, &p0, &p1);
    PoolCoveringRange(iw, g.window_w, g.stride_w, g.pad_w, g.q, &q0, &q1);
    float acc = 0.0f;
    for (int64_t p = p0; p <= p1; ++p) {
      for (int64_t q = q0; q <= q1; ++q) {
        const PoolWindow win = PoolWindowAt(g, p, q);
        const float grad = Load(dy, (plane * g.p + p) * g.q + q);
        if (kind == MNT_POOL_MAX) {
          if (PoolArgMax(load, g.w, win) == ih * g.w + iw) acc += grad;
        } else {
          acc += grad / static_cast<float>(win.divisor);
        }
      }
    }
    Store(dx, idx, acc);
  }
}

// ---- Batch norm / per-channel ops ------------------------------------------------

// Element k of channel ch in x viewed as [n, c, inner].
__device__ inline int64_t ChannelElement(int64_t k, int64_t ch, int64_t c,
                                         int64_t inner) {
  return ((k / inner) * c + ch) * inner + k % inner;
}

// One block per channel: batch mean and biased variance (double), the saved
// statistics and the running-statistics update.
__global__ void BatchNormTrainStatsKernel(DevTensor x, int64_t n, int64_t c,
                                          int64_t inner, float momentum,
                                          float epsilon, float* running_mean,
                                          float* running_var, float* mean,
                                          float* invstd) {
  const int64_t ch = blockIdx.x, count = n * inner;
  double sum = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    sum += Load(x, ChannelElement(k, ch, c, inner));
  }
  const double mu = BlockReduce(sum, SumOp(), 0.0) / count;
  double sq = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const double dev = Load(x, ChannelElement(k, ch, c, inner)) - mu;
    sq += dev * dev;
  }
  sq = BlockReduce(sq, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    mean[ch] = static_cast<float>(mu);
    invstd[ch] = static_cast<float>(1.0 / sqrt(sq / count + epsilon));
    const double m = momentum;
    running_mean[ch] = static_cast<float>((1.0 - m) * running_mean[ch] + m * mu);
    running_var[ch] =
        static_cast<float>((1.0 - m) * running_var[ch] + m * (sq / (count - 1)));
  }
}

__global__ void BatchNormInferStatsKernel(const float* running_mean,
                                          const float* running_var, int64_t c,
                                          float epsilon, float* mean, float* invstd) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c;
       ch += int64_t{gridDim.x} * blockDim.x) {
    mean[ch] = running_mean[ch];
    invstd[ch] = static_cast<float>(
        1.0 / sqrt(static_cast<double>(running_var[ch]) + epsilon));
  }
}

__global__ void BatchNormApplyKernel(DevTensor x, DevTensor gamma, DevTensor beta,
                                     const float* mean, const float* invstd,
                                     DevTensor y, int64_t total, int64_t c,
                                     int64_t inner) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (idx / inner) % c;
    const float scale = invstd[ch] * Load(gamma, ch);
    Store(y, idx, (Load(x, idx) - mean[ch]) * scale + Load(beta, ch));
  }
}

// One block per channel: sum dy and sum dy * xhat (double); dgamma/dbeta and
// the two means the input gradient needs (sums[2 * ch], sums[2 * ch + 1]).
__global__ void BatchNormGradSumsKernel(DevTensor dy, DevTensor x, const float* mean,
                                        const float* invstd, int64_t n, int64_t c,
                                        int64_t inner, bool accumulate,
                                        DevTensor dgamma, DevTensor dbeta,
                                        double* sums) {
  const int64_t ch = blockIdx.x, count = n * inner;
  const float mu = mean[ch];
  const double is = invstd[ch];
  double s_dy = 0.0, s_dyx = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t e = ChannelElement(k, ch, c, inner);
    const float g = Load(dy, e);
    s_dy += g;
    s_dyx += g * ((Load(x, e) - mu) * is);
  }
  s_dy = BlockReduce(s_dy, SumOp(), 0.0);
  s_dyx = BlockReduce(s_dyx, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    sums[2 * ch] = s_dy / count;
    sums[2 * ch + 1] = s_dyx / count;
    const float dg = accumulate ? Load(dgamma, ch) : 0.0f;
    const float db = accumulate ? Load(dbeta, ch) : 0.0f;
    Store(dgamma, ch, dg + static_cast<float>(s_dyx));
    Store(dbeta, ch, db + static_cast<float>(s_dy));
  }
}

__global__ void BatchNormInputGradKernel(DevTensor dy, DevTensor x, DevTensor gamma,
                                         const float* mean, const float* invstd,
                                         const double* sums, DevTensor dx,
                                         int64_t total, int64_t c, int64_t inner) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (idx / inner) % c;
    Store(dx, idx,
          BatchNormInputGrad(Load(dy, idx), Load(x, idx), mean[ch], invstd[ch],
                             Load(gamma, ch), sums[2 * ch], sums[2 * ch + 1]));
  }
}

// One block per channel: out[ch] (+)= sum of x over n and inner (double).
__global__ void ChannelSumKernel(DevTensor x, int64_t n, int64_t c, int64_t inner,
                                 bool accumulate, DevTensor out) {
  const int64_t ch = blockIdx.x, count = n * inner;
  double sum = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    sum += Load(x, ChannelElement(k, ch, c, inner));
  }
  sum = BlockReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    Store(out, ch, (accumulate ? Load(out, ch) : 0.0f) + static_cast<float>(sum));
  }
}

__global__ void ChannelBiasAddKernel(DevTensor y, DevTensor bias, int64_t total,
                                     int64_t c, int64_t inner) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    Store(y, idx, Load(y, idx) + Load(bias, (idx / inner) % c));
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

}  // namespace

size_t AttentionFallbackSharedBytes(const AttentionDims& a) {
  return AttentionKeyShared(a);  // the largest of the three kernels
}

cudaError_t LaunchAttentionForward(cudaStream_t s, const AttentionDims& a,
                                   DevTensor qkv, DevTensor y, float* lse) {
  const int64_t rows = a.b * a.h * a.t;
  if (rows == 0) return cudaSuccess;
  AttentionForwardKernel<<<static_cast<unsigned>(rows), kAttentionThreads,
                           AttentionForwardShared(a), s>>>(a, qkv, y, lse);
  return cudaGetLastError();
}

cudaError_t LaunchAttentionBackward(cudaStream_t s, const AttentionDims& a,
                                    DevTensor dy, DevTensor qkv, DevTensor y,
                                    const float* lse, DevTensor dqkv, float* delta) {
  const int64_t rows = a.b * a.h * a.t;
  if (rows == 0) return cudaSuccess;
  AttentionBackwardQueryKernel<<<static_cast<unsigned>(rows), kAttentionThreads,
                                 AttentionQueryShared(a), s>>>(a, dy, qkv, y, lse,
                                                               dqkv, delta);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  AttentionBackwardKeyKernel<<<static_cast<unsigned>(rows), kAttentionThreads,
                               AttentionKeyShared(a), s>>>(a, dy, qkv, lse, delta,
                                                           dqkv);
  return cudaGetLastError();
}

cudaError_t LaunchPoolForward(cudaStream_t s, const PoolGeometry& g,
                              MNT_PoolKind kind, int64_t planes, DevTensor x,
                              DevTensor y) {
  const int64_t total = planes * g.p * g.q;
  if (total == 0) return cudaSuccess;
  PoolForwardKernel<<<GridFor(total, kThreads), kThreads, 0, s>>>(g, kind, planes, x, y);
  return cudaGetLastError();
}

cudaError_t LaunchPoolBackward(cudaStream_t s, const PoolGeometry& g,
                               MNT_PoolKind kind, int64_t planes, DevTensor dy,
                               DevTensor x, DevTensor dx) {
  const int64_t total = planes * g.h * g.w;
  if (total == 0) return cudaSuccess;
  PoolBackwardKernel<<<GridFor(total, kThreads), kThreads, 0, s>>>(g, kind, planes,
                                                                   dy, x, dx);
  return cudaGetLastError();
}

cudaError_t LaunchBatchNormForward(cudaStream_t s, const BatchNormDims& d,
                                   DevTensor x, DevTensor gamma, DevTensor beta,
                                   float* running_mean, float* running_var,
                                   float* mean, float* invstd, DevTensor y) {
  if (d.c == 0) return cudaSuccess;
  if (d.training) {
    BatchNormTrainStatsKernel<<<static_cast<unsigned>(d.c), kThreads, 0, s>>>(
        x, d.n, d.c, d.inner, d.momentum, d.epsilon, running_mean, running_var,
        mean, invstd);
  } else {
    BatchNormInferStatsKernel<<<GridFor(d.c, kThreads), kThreads, 0, s>>>(
        running_mean, running_var, d.c, d.epsilon, mean, invstd);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const int64_t total = d.n * d.c * d.inner;
  if (total == 0) return cudaSuccess;
  BatchNormApplyKernel<<<GridFor(total, kThreads), kThreads, 0, s>>>(
      x, gamma, beta, mean, invstd, y, total, d.c, d.inner);
  return cudaGetLastError();
}

cudaError_t LaunchBatchNormBackward(cudaStream_t s, const BatchNormDims& d,
                                    DevTensor dy, DevTensor x, DevTensor gamma,
                                    const float* mean, const float* invstd,
                                    DevTensor dx, DevTensor dgamma, DevTensor dbeta,
                                    bool accumulate, double* sums) {
  if (d.c == 0) return cudaSuccess;
  BatchNormGradSumsKernel<<<static_cast<unsigned>(d.c), kThreads, 0, s>>>(
      dy, x, mean, invstd, d.n, d.c, d.inner, accumulate, dgamma, dbeta, sums);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const int64_t total = d.n * d.c * d.inner;
  if (total == 0) return cudaSuccess;
  BatchNormInputGradKernel<<<GridFor(total, kThreads), kThreads, 0, s>>>(
      dy, x, gamma, mean, invstd, sums, dx, total, d.c, d.inner);
  return cudaGetLastError();
}

cudaError_t LaunchChannelSum(cudaStream_t s, DevTensor x, int64_t n, int64_t c,
                             int64_t inner, bool accumulate, DevTensor out) {
  if (c == 0) return cudaSuccess;
  ChannelSumKernel<<<static_cast<unsigned>(c), kThreads, 0, s>>>(x, n, c, inner,
                                                                 accumulate, out);
  return cudaGetLastError();
}

cudaError_t LaunchChannelBiasAdd(cudaStream_t s, DevTensor y, DevTensor bias,
                                 int64_t n, int64_t c, int64_t inner) {
  const int64_t total = n * c * inner;
  if (total == 0) return cudaSuccess;
  ChannelBiasAddKernel<<<GridFor(total, kThreads), kThreads, 0, s>>>(y, bias, total,
                                                                     c, inner);
  return cudaGetLastError();
}

}  // namespace mnt::cuda

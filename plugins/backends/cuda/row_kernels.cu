// Row kernels (one block per row): softmax, fused softmax + cross-entropy +
// gradient, count-correct, layer norm forward/backward; deterministic
// two-pass column sums (bias and layer-norm parameter gradients); embedding
// lookup and its deterministic (atomic-free) backward. Row statistics
// accumulate in double, like the CPU reference.
#include <cuda_runtime.h>
#include <math.h>

#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/kernels.h"

namespace mnt::cuda {
namespace {


// Row max over [0, width) and 1 / sum exp(x - max) (sum in double).
struct RowSoftmaxStats {
  float max;
  float inv_sum;
  double sum;
};

__device__ RowSoftmaxStats SoftmaxStats(const DevTensor& x, int64_t base,
                                        int64_t width) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    m = fmaxf(m, Load(x, base + j));
  }
  m = BlockReduce(m, NanMaxOp(), -INFINITY);
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    sum += expf(Load(x, base + j) - m);
  }
  sum = BlockReduce(sum, SumOp(), 0.0);
  return {m, static_cast<float>(1.0 / sum), sum};
}

__global__ void SoftmaxKernel(DevTensor x, DevTensor y, int64_t rows,
                              int64_t width) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * width;
    const RowSoftmaxStats st = SoftmaxStats(x, base, width);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      Store(y, base + j, expf(Load(x, base + j) - st.max) * st.inv_sum);
    }
  }
}

__global__ void CrossEntropyKernel(DevTensor logits, const int32_t* targets,
                                   float* losses, DevTensor dlogits,
                                   int64_t batch, int64_t width,
                                   int64_t classes, float grad_scale,
                                   unsigned* error_word) {
  for (int64_t r = blockIdx.x; r < batch; r += gridDim.x) {
    const int64_t base = r * width;
    const int32_t t = targets[r];
    if (t < 0 || t >= classes) {  // ignored row (or a bad target): zeros
      if (t >= classes && threadIdx.x == 0) atomicOr(error_word, kErrorCrossEntropyTarget);
      if (threadIdx.x == 0) losses[r] = t < 0 ? 0.0f : NAN;
      if (dlogits.data != nullptr) {
        for (int64_t j = threadIdx.x; j < width; j += blockDim.x) Store(dlogits, base + j, 0.0f);
      }
      continue;
    }
    const RowSoftmaxStats st = SoftmaxStats(logits, base, classes);
    if (threadIdx.x == 0) {
      losses[r] = static_cast<float>(log(st.sum)) - (Load(logits, base + t) - st.max);
    }
    if (dlogits.data != nullptr) {
      for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
        const float g = j < classes
                            ? CrossEntropyGradient(Load(logits, base + j), st.max,
                                                   st.inv_sum, j == t, grad_scale)
                            : 0.0f;  // padding columns
        Store(dlogits, base + j, g);
      }
    }
  }
}

// One block; a warp per row finds the first maximum; integer counting is
// order-independent, so the shared atomic stays deterministic.
__global__ void CountCorrectKernel(DevTensor logits, const int32_t* targets,
                                   float* count, int64_t batch, int64_t width,
                                   int64_t classes) {
  __shared__ unsigned long long correct;
  if (threadIdx.x == 0) correct = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  for (int64_t r = warp; r < batch; r += warps) {
    const int64_t base = r * width;
    float best = -INFINITY;
    int64_t best_j = classes;  // "none yet"
    for (int64_t j = lane; j < classes; j += 32) {
      const float v = Load(logits, base + j);
      if (best_j == classes || v > best) { best = v; best_j = j; }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, offset);
      const int64_t oj = __shfl_xor_sync(0xffffffffu, best_j, offset);
      const bool other_valid = oj < classes;
      const bool mine_valid = best_j < classes;
      if (other_valid && (!mine_valid || ov > best || (ov == best && oj < best_j))) {
        best = ov;
        best_j = oj;
      }
    }
    if (lane == 0 && targets[r] == best_j) atomicAdd(&correct, 1ull);
  }
  __syncthreads();
  if (threadIdx.x == 0) *count = static_cast<float>(correct);
}

__global__ void LayerNormForwardKernel(DevTensor x, DevTensor w, DevTensor b,
                                       DevTensor y, float* mean, float* rstd,
                                       int64_t rows, int64_t c, float eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * c;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) sum += Load(x, base + j);
    const double mu = BlockReduce(sum, SumOp(), 0.0) / c;
    double sq = 0.0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const double d = Load(x, base + j) - mu;
      sq += d * d;
    }
    sq = BlockReduce(sq, SumOp(), 0.0);
    const float m = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / sqrt(sq / c + eps));
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      Store(y, base + j, (Load(x, base + j) - m) * rs * Load(w, j) + Load(b, j));
    }
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
}

__global__ void LayerNormBackwardInputKernel(DevTensor dy, DevTensor x,
                                             DevTensor w, const float* mean,
                                             const float* rstd, DevTensor dx,
                                             int64_t rows, int64_t c) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * c;
    const float m = mean[r], rs = rstd[r];
    double s1 = 0.0, s2 = 0.0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const float xhat = (Load(x, base + j) - m) * rs;
      const float dxhat = Load(dy, base + j) * Load(w, j);
      s1 += dxhat;
      s2 += static_cast<double>(dxhat) * xhat;
    }
    s1 = BlockReduce(s1, SumOp(), 0.0);
    s2 = BlockReduce(s2, SumOp(), 0.0);
    const float a = static_cast<float>(s1 / c), bcoef = static_cast<float>(s2 / c);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const float xhat = (Load(x, base + j) - m) * rs;
      const float dxhat = Load(dy, base + j) * Load(w, j);
      Store(dx, base + j, LayerNormInputGradient(dxhat, xhat, a, bcoef, rs));
    }
  }
}

constexpr int64_t kRowsPerChunk = 64;
constexpr int64_t kMaxChunks = 256;

// Pass 1: partial column sums over one chunk of rows. With x != NULL also the
// layer-norm weight gradient sum(dy * xhat) into partials_w.
__global__ void ColumnPartialsKernel(DevTensor dy, DevTensor x,
                                     const float* mean, const float* rstd,
                                     int64_t rows, int64_t c, int64_t chunks,
                                     double* partials_b, double* partials_w) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= c) return;
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * per_chunk;
  const int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
  double sb = 0.0, sw = 0.0;
  for (int64_t r = r0; r < r1; ++r) {
    const float g = Load(dy, r * c + col);
    sb += g;
    if (x.data != nullptr) {
      const float xhat = (Load(x, r * c + col) - mean[r]) * rstd[r];
      sw += static_cast<double>(g) * xhat;
    }
  }
  partials_b[chunk * c + col] = sb;
  if (x.data != nullptr) partials_w[chunk * c + col] = sw;
}

// Pass 2: chunks summed in order; out = (accumulate ? out : 0) + float(sum).
__global__ void ColumnFinishKernel(const double* partials, int64_t chunks,
                                   int64_t c, DevTensor out, bool accumulate) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= c) return;
  double s = 0.0;
  for (int64_t k = 0; k < chunks; ++k) s += partials[k * c + col];
  const float old = accumulate ? Load(out, col) : 0.0f;
  Store(out, col, old + static_cast<float>(s));
}

__global__ void EmbeddingForwardKernel(DevTensor table, const int32_t* ids,
                                       DevTensor out, int64_t n, int64_t vocab,
                                       int64_t c, unsigned* error_word) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n * c; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / c, col = i % c;
    const int32_t id = ids[row];
    if (id < 0 || id >= vocab) {
      if (col == 0) atomicOr(error_word, kErrorEmbeddingId);
      Store(out, i, 0.0f);
      continue;
    }
    Store(out, i, Load(table, id * c + col));
  }
}

__global__ void CheckIdsKernel(const int32_t* ids, int64_t n, int64_t vocab,
                               unsigned* error_word) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (ids[i] < 0 || ids[i] >= vocab) atomicOr(error_word, kErrorEmbeddingId);
  }
}

// One block per table row v; its threads span the columns and scan the ids in
// order, so every sum has one fixed order (no atomics). O(V * N) id reads.
__global__ void EmbeddingBackwardKernel(DevTensor dout, const int32_t* ids,
                                        DevTensor dtable, int64_t n,
                                        int64_t vocab, int64_t c,
                                        bool accumulate) {
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    for (int64_t col = threadIdx.x; col < c; col += blockDim.x) {
      double acc = accumulate ? Load(dtable, v * c + col) : 0.0;
      for (int64_t i = 0; i < n; ++i) {
        if (ids[i] == v) acc += Load(dout, i * c + col);
      }
      Store(dtable, v * c + col, static_cast<float>(acc));
    }
  }
}

unsigned RowGrid(int64_t rows) {
  return static_cast<unsigned>(rows < (1 << 20) ? (rows > 0 ? rows : 1) : (1 << 20));
}

}  // namespace

cudaError_t LaunchSoftmax(cudaStream_t s, DevTensor x, DevTensor y,
                          int64_t rows, int64_t width) {
  if (rows <= 0 || width <= 0) return cudaGetLastError();
  SoftmaxKernel<<<RowGrid(rows), kThreads, 0, s>>>(x, y, rows, width);
  return cudaGetLastError();
}

cudaError_t LaunchCrossEntropy(cudaStream_t s, DevTensor logits,
                               const int32_t* targets, float* losses,
                               DevTensor dlogits, int64_t batch, int64_t width,
                               int64_t classes, float grad_scale,
                               unsigned* error_word) {
  if (batch <= 0) return cudaGetLastError();
  CrossEntropyKernel<<<RowGrid(batch), kThreads, 0, s>>>(
      logits, targets, losses, dlogits, batch, width, classes, grad_scale,
      error_word);
  return cudaGetLastError();
}

cudaError_t LaunchCountCorrect(cudaStream_t s, DevTensor logits,
                               const int32_t* targets, float* count,
                               int64_t batch, int64_t width, int64_t classes) {
  CountCorrectKernel<<<1, 1024, 0, s>>>(logits, targets, count, batch, width,
                                        classes);
  return cudaGetLastError();
}

cudaError_t LaunchLayerNormForward(cudaStream_t s, DevTensor x, DevTensor w,
                                   DevTensor b, DevTensor y, float* mean,
                                   float* rstd, int64_t rows, int64_t c,
                                   float epsilon) {
  if (rows <= 0) return cudaGetLastError();
  LayerNormForwardKernel<<<RowGrid(rows), kThreads, 0, s>>>(x, w, b, y, mean,
                                                            rstd, rows, c, epsilon);
  return cudaGetLastError();
}

cudaError_t LaunchLayerNormBackwardInput(cudaStream_t s, DevTensor dy,
                                         DevTensor x, DevTensor w,
                                         const float* mean, const float* rstd,
                                         DevTensor dx, int64_t rows, int64_t c) {
  if (rows <= 0) return cudaGetLastError();
  LayerNormBackwardInputKernel<<<RowGrid(rows), kThreads, 0, s>>>(
      dy, x, w, mean, rstd, dx, rows, c);
  return cudaGetLastError();
}

int64_t ColumnSumChunks(int64_t rows) {
  int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  if (chunks < 1) chunks = 1;
  return chunks > kMaxChunks ? kMaxChunks : chunks;
}

namespace {
cudaError_t ColumnSums(cudaStream_t s, DevTensor dy, DevTensor x,
                       const float* mean, const float* rstd, DevTensor dw,
                       DevTensor db, int64_t rows, int64_t c, bool accumulate,
                       double* partials) {
  if (c <= 0) return cudaGetLastError();
  const int64_t chunks = ColumnSumChunks(rows);
  double* partials_b = partials;
  double* partials_w = partials + chunks * c;
  const dim3 grid(GridFor(c, kThreads), static_cast<unsigned>(chunks));
  ColumnPartialsKernel<<<grid, kThreads, 0, s>>>(dy, x, mean, rstd, rows, c,
                                                 chunks, partials_b, partials_w);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  ColumnFinishKernel<<<GridFor(c, kThreads), kThreads, 0, s>>>(
      partials_b, chunks, c, db, accumulate);
  err = cudaGetLastError();
  if (err != cudaSuccess || dw.data == nullptr) return err;
  ColumnFinishKernel<<<GridFor(c, kThreads), kThreads, 0, s>>>(
      partials_w, chunks, c, dw, accumulate);
  return cudaGetLastError();
}
}  // namespace

cudaError_t LaunchBiasGrad(cudaStream_t s, DevTensor dy, DevTensor db,
                           int64_t rows, int64_t c, bool accumulate,
                           double* partials) {
  return ColumnSums(s, dy, DevTensor{}, nullptr, nullptr, DevTensor{}, db, rows,
                    c, accumulate, partials);
}

cudaError_t LaunchLayerNormParamGrads(cudaStream_t s, DevTensor dy,
                                      DevTensor x, const float* mean,
                                      const float* rstd, DevTensor dw,
                                      DevTensor db, int64_t rows, int64_t c,
                                      bool accumulate, double* partials) {
  return ColumnSums(s, dy, x, mean, rstd, dw, db, rows, c, accumulate, partials);
}

cudaError_t LaunchEmbeddingForward(cudaStream_t s, DevTensor table,
                                   const int32_t* ids, DevTensor out,
                                   int64_t n, int64_t vocab, int64_t c,
                                   unsigned* error_word) {
  if (n * c <= 0) return cudaGetLastError();
  EmbeddingForwardKernel<<<GridFor(n * c, kThreads), kThreads, 0, s>>>(
      table, ids, out, n, vocab, c, error_word);
  return cudaGetLastError();
}

cudaError_t LaunchEmbeddingBackward(cudaStream_t s, DevTensor dout,
                                    const int32_t* ids, DevTensor dtable,
                                    int64_t n, int64_t vocab, int64_t c,
                                    bool accumulate, unsigned* error_word) {
  if (n > 0) {
    CheckIdsKernel<<<GridFor(n, kThreads), kThreads, 0, s>>>(ids, n, vocab,
                                                             error_word);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  if (vocab * c <= 0) return cudaGetLastError();
  EmbeddingBackwardKernel<<<RowGrid(vocab), kThreads, 0, s>>>(
      dout, ids, dtable, n, vocab, c, accumulate);
  return cudaGetLastError();
}

}  // namespace mnt::cuda

// EMBEDDING_FORWARD and its deterministic (atomic-free) backward. Ids are
// checked on the device: a bad id flags the device error word (reported at
// the next sync point) and its row is written as 0 / not accumulated.
#include <cuda_runtime.h>

#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

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

}  // namespace

Status CudaBackend::EmbeddingForward(const backend::EmbeddingForwardCall& e) {
  if (e.n * e.c > 0) {
    EmbeddingForwardKernel<<<GridFor(e.n * e.c, kThreads), kThreads, 0, stream>>>(
        Dev(e.table), e.ids.i32(), Dev(e.out), e.n, e.vocab, e.c, errors.word());
  }
  return Launched(e, "embedding_forward");
}

Status CudaBackend::EmbeddingBackward(const backend::EmbeddingBackwardCall& e) {
  if (e.n > 0) {
    CheckIdsKernel<<<GridFor(e.n, kThreads), kThreads, 0, stream>>>(e.ids.i32(), e.n,
                                                                    e.vocab, errors.word());
    MNT_RETURN_IF_ERROR(Launched(e, "embedding_check_ids"));
  }
  if (e.vocab * e.c > 0) {
    EmbeddingBackwardKernel<<<RowGrid(e.vocab), kThreads, 0, stream>>>(
        Dev(e.dout), e.ids.i32(), Dev(e.dtable), e.n, e.vocab, e.c, e.accumulate);
  }
  return Launched(e, "embedding_backward");
}

}  // namespace mnt::cuda

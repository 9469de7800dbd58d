// EMBEDDING_FORWARD and its deterministic (atomic-free) backward. Ids are
// checked on the device: a bad id flags the device error word (reported at
// the next sync point) and its row is written as 0 / not accumulated.
// The backward (embedding_buckets.h): bucket keys, a stable cub radix sort
// of (key, token) pairs, then one block per run of equal ids summing its
// dout rows in token order, in double. O(N log V + N C) work; the CPU
// reference's order, so the same bits every run.
// Both kernels are compiled per storage type (table/out, dout/dtable of one
// dtype) and chosen once per launch.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/elementwise.h"
#include "plugins/backends/cuda/embedding_buckets.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

template <typename S>
__global__ void EmbeddingForwardKernel(DevTensor table, const int32_t* ids,
                                       DevTensor out, int64_t n, int64_t vocab,
                                       int64_t c, unsigned* error_word) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n * c; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / c, col = i % c;
    const int32_t id = ids[row];
    if (id < 0 || id >= vocab) {
      if (col == 0) atomicOr(error_word, kErrorEmbeddingId);
      Store<S>(out, i, 0.0f);
      continue;
    }
    Store<S>(out, i, Load<S>(table, id * c + col));
  }
}

// Flags bad ids and writes the sort's input: bucket keys and token indices.
__global__ void BucketKeysKernel(const int32_t* ids, int64_t n, int64_t vocab,
                                 int32_t* keys, int32_t* tokens, unsigned* error_word) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t key = EmbeddingBucket(ids[i], vocab);
    if (key == vocab) atomicOr(error_word, kErrorEmbeddingId);
    keys[i] = key;
    tokens[i] = static_cast<int32_t>(i);
  }
}

// One block per sorted position; the block at the start of a run writes its
// id's row: the old value (or 0) plus the run's dout rows in token order.
template <typename S>
__global__ void EmbeddingRunSumKernel(DevTensor dout, const int32_t* keys,
                                      const int32_t* tokens, DevTensor dtable,
                                      int64_t n, int64_t vocab, int64_t c,
                                      bool accumulate) {
  for (int64_t p = blockIdx.x; p < n; p += gridDim.x) {
    if (!RunStartsAt(keys, p) || keys[p] == vocab) continue;
    const int64_t end = RunEnd(keys, p, n), row = keys[p];
    for (int64_t col = threadIdx.x; col < c; col += blockDim.x) {
      double acc = accumulate ? Load<S>(dtable, row * c + col) : 0.0;
      for (int64_t q = p; q < end; ++q) acc += Load<S>(dout, tokens[q] * c + col);
      Store<S>(dtable, row * c + col, static_cast<float>(acc));
    }
  }
}

}  // namespace

Status CudaBackend::EmbeddingForward(const backend::EmbeddingForwardCall& e) {
  if (e.n * e.c == 0) return Status::Ok();
  const DevTensor table = Dev(e.table), out = Dev(e.out);
  const cudaError_t err = WithStorage(CommonDType({table.dtype, out.dtype}), [&](auto storage) {
    return Launch(EmbeddingForwardKernel<decltype(storage)>, GridFor(e.n * e.c, kThreads),
                  kThreads, 0, stream, table, e.ids.i32(), out, e.n, e.vocab, e.c,
                  errors.word());
  });
  return Launched(e, err, "embedding_forward");
}

Status CudaBackend::EmbeddingBackward(const backend::EmbeddingBackwardCall& e) {
  if (e.vocab * e.c > 0 && !e.accumulate) {  // rows no token hits stay 0
    MNT_RETURN_IF_ERROR(
        Launched(e, LaunchFill(stream, Dev(e.dtable), e.vocab * e.c, 0.0), "embedding_zero"));
  }
  if (e.n == 0) return Status::Ok();
  if (e.n > INT32_MAX || e.vocab >= INT32_MAX) {
    return sdk::Unimplemented(sdk::Format(
        "%s: the cuda embedding backward sorts int32 token indices and ids "
        "(N=%lld, V=%lld)", e.op_name(), (long long)e.n, (long long)e.vocab));
  }
  const int n = static_cast<int>(e.n);
  Scratch keys_in(*this), keys_out(*this), tokens_in(*this), tokens_out(*this), temp(*this);
  for (Scratch* s : {&keys_in, &keys_out, &tokens_in, &tokens_out}) {
    MNT_RETURN_IF_ERROR(s->Allocate(sizeof(int32_t) * e.n));
  }
  auto* ki = static_cast<int32_t*>(keys_in.data());
  auto* ko = static_cast<int32_t*>(keys_out.data());
  auto* ti = static_cast<int32_t*>(tokens_in.data());
  auto* to = static_cast<int32_t*>(tokens_out.data());
  MNT_RETURN_IF_ERROR(Launched(e,
                               Launch(BucketKeysKernel, GridFor(e.n, kThreads), kThreads, 0,
                                      stream, e.ids.i32(), e.n, e.vocab, ki, ti,
                                      errors.word()),
                               "embedding_bucket_keys"));
  const int bits = EmbeddingSortBits(e.vocab);
  size_t temp_bytes = 0;
  MNT_CUDA_RETURN_IF_ERROR(
      cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ki, ko, ti, to, n, 0, bits, stream),
      sdk::Format("%s: cub::DeviceRadixSort::SortPairs (size query)", e.op_name()));
  MNT_RETURN_IF_ERROR(temp.Allocate(temp_bytes > 0 ? temp_bytes : 16));  // non-null: not a query
  MNT_CUDA_RETURN_IF_ERROR(
      cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, ki, ko, ti, to, n, 0, bits,
                                      stream),
      sdk::Format("%s: cub::DeviceRadixSort::SortPairs(%d items, %d bits)", e.op_name(), n,
                  bits));
  if (e.c == 0) return Status::Ok();
  const DevTensor dout = Dev(e.dout), dtable = Dev(e.dtable);
  const cudaError_t err = WithStorage(CommonDType({dout.dtype, dtable.dtype}), [&](auto storage) {
    return Launch(EmbeddingRunSumKernel<decltype(storage)>, RowGrid(e.n), kThreads, 0, stream,
                  dout, static_cast<const int32_t*>(ko), static_cast<const int32_t*>(to),
                  dtable, e.n, e.vocab, e.c, e.accumulate);
  });
  return Launched(e, err, "embedding_run_sum");
}

}  // namespace mnt::cuda

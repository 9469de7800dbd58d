// TENSOR_STATS (ABI 1.10): the smallest and largest finite |x| and the
// inf/NaN counts of a float tensor, measured where it lives, for
// --debug_overflow (16 bytes come back instead of the tensor).
//
// Two launches, as the other whole-tensor reductions (reduce.cu): a fixed
// grid of at most kMaxStatsBlocks blocks, each thread folding its
// grid-stride elements into a partial (common/tensor_stats_math.h on the
// elements' fp32 bit patterns: integer min/max and counts, so neither
// --use_fast_math's flush-to-zero nor -0 changes anything) and each block
// reducing its threads' partials into one in scratch; then one block
// combining the block partials and writing range F32 [2] and counts I32 [2]
// (saturated). Every step is exact and order-independent: the CPU
// backend's bits on any grid.
#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/backends/common/tensor_stats_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

constexpr int64_t kStatsElementsPerBlock = kThreads * 16;
constexpr int64_t kMaxStatsBlocks = 1024;

struct MinU32 {
  __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a < b ? a : b; }
};
struct MaxU32 {
  __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a > b ? a : b; }
};

// The block's threads' partials into one (every thread gets it).
__device__ TensorStatsPartial BlockReduceStats(TensorStatsPartial p) {
  p.min_abs_bits = BlockReduce(p.min_abs_bits, MinU32(), kTensorStatsInfBits);
  p.max_abs_bits = BlockReduce(p.max_abs_bits, MaxU32(), 0u);
  p.nonfinite = BlockReduce(static_cast<unsigned long long>(p.nonfinite), SumOp(), 0ull);
  p.nans = BlockReduce(static_cast<unsigned long long>(p.nans), SumOp(), 0ull);
  return p;
}

// Pass 1: block b's partial of its grid-stride elements into partials[b].
template <MNT_DType kDType>
__global__ void TensorStatsPartialsKernel(const void* x, int64_t n,
                                          TensorStatsPartial* partials) {
  TensorStatsPartial p = TensorStatsEmpty();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    TensorStatsAddBits(&p, TensorStatsElementBits(kDType, x, i));
  }
  p = BlockReduceStats(p);
  if (threadIdx.x == 0) partials[blockIdx.x] = p;
}

// Pass 2 (one block): the `count` partials combined, the outputs written.
__global__ void TensorStatsFinishKernel(const TensorStatsPartial* partials, int64_t count,
                                        float* range, int32_t* counts) {
  TensorStatsPartial p = TensorStatsEmpty();
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) TensorStatsMerge(&p, partials[i]);
  p = BlockReduceStats(p);
  if (threadIdx.x == 0) TensorStatsFinish(p, range, counts);
}

// Blocks of pass 1 for n elements (0 for none).
int64_t StatsBlocks(int64_t n) {
  if (n <= 0) return 0;
  const int64_t blocks = (n + kStatsElementsPerBlock - 1) / kStatsElementsPerBlock;
  return blocks < kMaxStatsBlocks ? blocks : kMaxStatsBlocks;
}

cudaError_t LaunchStatsPartials(cudaStream_t s, MNT_DType dtype, const void* x, int64_t n,
                                int64_t blocks, TensorStatsPartial* partials) {
  if (blocks == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(blocks);
  switch (dtype) {
    case MNT_DTYPE_F32:
      return Launch(TensorStatsPartialsKernel<MNT_DTYPE_F32>, grid, kThreads, 0, s, x, n,
                    partials);
    case MNT_DTYPE_F16:
      return Launch(TensorStatsPartialsKernel<MNT_DTYPE_F16>, grid, kThreads, 0, s, x, n,
                    partials);
    case MNT_DTYPE_BF16:
      return Launch(TensorStatsPartialsKernel<MNT_DTYPE_BF16>, grid, kThreads, 0, s, x, n,
                    partials);
    default:
      return cudaErrorInvalidValue;  // the contract check admits only these
  }
}

}  // namespace

Status CudaBackend::TensorStats(const backend::TensorStatsCall& c) {
  const int64_t blocks = StatsBlocks(c.n);
  Scratch partials(*this);
  // At least one partial's room, so the pointer is never NULL (an empty x
  // launches only the finish, which reads none).
  MNT_RETURN_IF_ERROR(
      partials.Allocate(sizeof(TensorStatsPartial) * static_cast<size_t>(blocks > 0 ? blocks : 1)));
  auto* part = static_cast<TensorStatsPartial*>(partials.data());
  MNT_RETURN_IF_ERROR(Launched(
      c, LaunchStatsPartials(stream, c.x->dtype, c.x->data, c.n, blocks, part), "tensor_stats"));
  return Launched(c,
                  Launch(TensorStatsFinishKernel, 1, kThreads, 0, stream,
                         static_cast<const TensorStatsPartial*>(part), blocks, c.range.f32(),
                         c.counts.i32()),
                  "tensor_stats_finish");
}

}  // namespace mnt::cuda

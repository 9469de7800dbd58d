// Deterministic reductions: a fixed grid writes one double partial per block
// (fixed-order tree within the block), then one block combines the partials
// in a fixed order. Used by REDUCE and GLOBAL_NORM_SQUARED.
#include <cuda_runtime.h>

#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/kernels.h"

namespace mnt::cuda {
namespace {

constexpr int64_t kElementsPerBlock = kThreads * 8;
constexpr int64_t kMaxPartials = 1024;

__device__ inline double Identity(ReduceOp op) {
  return op == ReduceOp::kMax ? -INFINITY : 0.0;
}

__device__ inline double Combine(ReduceOp op, double a, double b) {
  return op == ReduceOp::kMax ? NanMaxOp()(a, b) : a + b;
}

template <ReduceOp kOp>
struct CombineOp {
  __device__ double operator()(double a, double b) const { return Combine(kOp, a, b); }
};

template <ReduceOp kOp>
__global__ void PartialsKernel(DevTensor x, int64_t n, double* partials) {
  double acc = Identity(kOp);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double v = Load(x, i);
    acc = Combine(kOp, acc, kOp == ReduceOp::kSumSquares ? v * v : v);
  }
  acc = BlockReduce(acc, CombineOp<kOp == ReduceOp::kMax ? ReduceOp::kMax : ReduceOp::kSum>(),
                    Identity(kOp));
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <ReduceOp kOp>
__global__ void FinishKernel(const double* partials, int64_t count,
                             double divisor, float* out) {
  double acc = Identity(kOp);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    acc = Combine(kOp, acc, partials[i]);
  }
  acc = BlockReduce(acc, CombineOp<kOp>(), Identity(kOp));
  if (threadIdx.x == 0) *out = static_cast<float>(acc / divisor);
}

}  // namespace

int64_t ReducePartialCount(int64_t n) {
  if (n <= 0) return 0;
  const int64_t blocks = (n + kElementsPerBlock - 1) / kElementsPerBlock;
  return blocks < kMaxPartials ? blocks : kMaxPartials;
}

cudaError_t LaunchReducePartials(cudaStream_t s, DevTensor x, int64_t n,
                                 ReduceOp op, double* partials) {
  const int64_t blocks = ReducePartialCount(n);
  if (blocks == 0) return cudaGetLastError();
  const unsigned grid = static_cast<unsigned>(blocks);
  switch (op) {
    case ReduceOp::kSum:
      PartialsKernel<ReduceOp::kSum><<<grid, kThreads, 0, s>>>(x, n, partials);
      break;
    case ReduceOp::kSumSquares:
      PartialsKernel<ReduceOp::kSumSquares><<<grid, kThreads, 0, s>>>(x, n, partials);
      break;
    case ReduceOp::kMax:
      PartialsKernel<ReduceOp::kMax><<<grid, kThreads, 0, s>>>(x, n, partials);
      break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchReduceFinish(cudaStream_t s, const double* partials,
                               int64_t count, ReduceOp op, double divisor,
                               float* out) {
  if (op == ReduceOp::kMax) {
    FinishKernel<ReduceOp::kMax><<<1, kThreads, 0, s>>>(partials, count, divisor, out);
  } else {
    FinishKernel<ReduceOp::kSum><<<1, kThreads, 0, s>>>(partials, count, divisor, out);
  }
  return cudaGetLastError();
}

}  // namespace mnt::cuda

// SOFTMAX, fused CROSS_ENTROPY (+ gradient), COUNT_CORRECT and
// FUSED_CLASSIFIER (in place over the logits): one block per row; row sums
// accumulate in double, like the CPU reference. A target
// >= num_classes cannot be checked on the host without a round trip: the
// kernel writes a NaN loss and flags the device error word.
#include <cuda_runtime.h>
#include <math.h>

#include "plugins/backends/common/classifier_math.h"
#include "plugins/backends/common/tensor_access.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

// Row max over [0, width) and 1 / sum exp(x - max) (sum in double).
struct RowSoftmaxStats {
  float max;
  float inv_sum;
  double sum;
};

template <typename S>
__device__ RowSoftmaxStats SoftmaxStats(const DevTensor& x, int64_t base,
                                        int64_t width) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    m = fmaxf(m, Load<S>(x, base + j));
  }
  m = BlockReduce(m, NanMaxOp(), -INFINITY);
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    sum += expf(Load<S>(x, base + j) - m);
  }
  sum = BlockReduce(sum, SumOp(), 0.0);
  return {m, static_cast<float>(1.0 / sum), sum};
}

template <typename S>
__global__ void SoftmaxKernel(DevTensor x, DevTensor y, int64_t rows,
                              int64_t width) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * width;
    const RowSoftmaxStats st = SoftmaxStats<S>(x, base, width);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      Store<S>(y, base + j, expf(Load<S>(x, base + j) - st.max) * st.inv_sum);
    }
  }
}

template <typename S>
__global__ void CrossEntropyKernel(DevTensor logits, const int32_t* targets,
                                   float* losses, DevTensor dlogits,
                                   int64_t batch, int64_t width,
                                   int64_t classes, float host_grad_scale,
                                   const float* grad_multiplier, unsigned* error_word) {
  // One fp32 product, as the CPU backend forms it (ABI 1.6's device multiplier).
  const float grad_scale =
      grad_multiplier != nullptr ? *grad_multiplier * host_grad_scale : host_grad_scale;
  for (int64_t r = blockIdx.x; r < batch; r += gridDim.x) {
    const int64_t base = r * width;
    const int32_t t = targets[r];
    if (t < 0 || t >= classes) {  // ignored row (or a bad target): zeros
      if (t >= classes && threadIdx.x == 0) atomicOr(error_word, kErrorCrossEntropyTarget);
      if (threadIdx.x == 0) losses[r] = t < 0 ? 0.0f : NAN;
      if (dlogits.data != nullptr) {
        for (int64_t j = threadIdx.x; j < width; j += blockDim.x) Store<S>(dlogits, base + j, 0.0f);
      }
      continue;
    }
    const RowSoftmaxStats st = SoftmaxStats<S>(logits, base, classes);
    if (threadIdx.x == 0) {
      losses[r] = static_cast<float>(log(st.sum)) - (Load<S>(logits, base + t) - st.max);
    }
    if (dlogits.data != nullptr) {
      for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
        const float g = j < classes
                            ? CrossEntropyGradient(Load<S>(logits, base + j), st.max,
                                                   st.inv_sum, j == t, grad_scale)
                            : 0.0f;  // padding columns
        Store<S>(dlogits, base + j, g);
      }
    }
  }
}

// FUSED_CLASSIFIER: one block per row. Each thread keeps the online (max,
// sum) of its strided elements (classifier_math.h) in one read of the row;
// the block takes the max, then sums each thread's rescaled sum in double
// (fixed order); a second pass overwrites every element with its gradient.
template <typename S>
__global__ void FusedClassifierKernel(DevTensor logits, const int32_t* targets,
                                      const float* multiplier, float* losses,
                                      int64_t batch, int64_t width, int64_t classes,
                                      float grad_scale, unsigned* error_word) {
  const float scale = multiplier != nullptr ? grad_scale * *multiplier : grad_scale;
  for (int64_t r = blockIdx.x; r < batch; r += gridDim.x) {
    const int64_t base = r * width;
    const int32_t t = targets[r];
    if (t < 0 || t >= classes) {  // ignored row (or a bad target): zeros
      if (t >= classes && threadIdx.x == 0) atomicOr(error_word, kErrorCrossEntropyTarget);
      if (threadIdx.x == 0) losses[r] = t < 0 ? 0.0f : NAN;
      for (int64_t j = threadIdx.x; j < width; j += blockDim.x) Store<S>(logits, base + j, 0.0f);
      continue;
    }
    RunningSoftmax mine = SoftmaxStatsEmpty();
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
      mine = SoftmaxStatsAdd(mine, Load<S>(logits, base + j));
    }
    const float max = BlockReduce(mine.max, NanMaxOp(), -INFINITY);
    const double sum = BlockReduce(
        static_cast<double>(RescaleSum(mine.sum, mine.max, max)), SumOp(), 0.0);
    const float target_logit = Load<S>(logits, base + t);
    __syncthreads();  // every thread has read the target before it is overwritten
    if (threadIdx.x == 0) {
      losses[r] = ClassifierLoss(target_logit, max, static_cast<float>(log(sum)));
    }
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      const float g = j < classes ? CrossEntropyGradient(Load<S>(logits, base + j), max, inv_sum,
                                                   j == t, scale)
                                  : 0.0f;  // padding columns
      Store<S>(logits, base + j, g);
    }
  }
}

// mean = sum of losses / batch, one block of kWideThreads, double in a
// fixed order. __launch_bounds__: ptxas must fit the registers of 1024
// threads (64 each), or the launch fails for want of resources.
__global__ void __launch_bounds__(kWideThreads)
    MeanLossKernel(const float* losses, int64_t batch, float* mean) {
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) sum += losses[i];
  sum = BlockReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) *mean = static_cast<float>(sum / static_cast<double>(batch));
}

// One block of kWideThreads; a warp per row finds the first maximum;
// integer counting is order-independent, so the shared atomic stays
// deterministic.
template <typename S>
__global__ void __launch_bounds__(kWideThreads)
    CountCorrectKernel(DevTensor logits, const int32_t* targets, float* count,
                       int64_t batch, int64_t width, int64_t classes) {
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
      const float v = Load<S>(logits, base + j);
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

}  // namespace

Status CudaBackend::Softmax(const backend::SoftmaxCall& c) {
  if (c.rows == 0 || c.width == 0) return Status::Ok();
  const DevTensor x = Dev(c.x), y = Dev(c.y);
  const cudaError_t err = WithStorage(CommonDType({x.dtype, y.dtype}), [&](auto storage) {
    return Launch(SoftmaxKernel<decltype(storage)>, RowGrid(c.rows), kThreads, 0, stream, x, y,
                  c.rows, c.width);
  });
  return Launched(c, err, "softmax");
}

Status CudaBackend::CrossEntropy(const backend::CrossEntropyCall& c) {
  if (c.batch == 0) return Status::Ok();
  const DevTensor logits = Dev(c.logits), dlogits = Dev(c.dlogits);
  const cudaError_t err =
      WithStorage(CommonDType({logits.dtype, dlogits.dtype}), [&](auto storage) {
        return Launch(CrossEntropyKernel<decltype(storage)>, RowGrid(c.batch), kThreads, 0,
                      stream, logits, c.targets.i32(), c.losses.f32(), dlogits, c.batch,
                      c.width, c.classes, c.grad_scale,
                      c.grad_multiplier.present() ? c.grad_multiplier.f32() : nullptr,
                      errors.word());
      });
  return Launched(c, err, "cross_entropy");
}

Status CudaBackend::CountCorrect(const backend::CountCorrectCall& c) {
  const DevTensor logits = Dev(c.logits);
  const cudaError_t err = WithStorage(logits.dtype, [&](auto storage) {
    return Launch(CountCorrectKernel<decltype(storage)>, 1, kWideThreads, 0, stream, logits,
                  c.targets.i32(), c.count.f32(), c.batch, c.width, c.classes);
  });
  return Launched(c, err, "count_correct");
}

Status CudaBackend::FusedClassifier(const backend::FusedClassifierCall& c) {
  if (c.batch > 0) {
    const DevTensor logits = Dev(c.logits);
    const cudaError_t err = WithStorage(logits.dtype, [&](auto storage) {
      return Launch(FusedClassifierKernel<decltype(storage)>, RowGrid(c.batch), kThreads, 0,
                    stream, logits, c.targets.i32(), c.multiplier.f32(), c.losses.f32(),
                    c.batch, c.width, c.classes, c.grad_scale, errors.word());
    });
    MNT_RETURN_IF_ERROR(Launched(c, err, "fused_classifier"));
  }
  if (!c.mean.present()) return Status::Ok();
  return Launched(c,
                  Launch(MeanLossKernel, 1, kWideThreads, 0, stream, c.losses.f32(), c.batch,
                         c.mean.f32()),
                  "fused_classifier_mean");
}

}  // namespace mnt::cuda

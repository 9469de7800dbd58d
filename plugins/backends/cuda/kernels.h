// Host-callable launchers of the hand-written CUDA kernels (defined in the
// three .cu files). Each enqueues on `stream` and returns the launch status
// (cudaGetLastError); operands were checked by the caller (ops_*.cc).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_KERNELS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/common/step_math.h"

namespace mnt::cuda {

// A float (or I32) buffer on the device; data NULL means "absent".
struct DevTensor {
  void* data = nullptr;
  MNT_DType dtype = MNT_DTYPE_INVALID;
};

// Bits of the device-side error word, reported at the next sync point:
// checks that would need a device-to-host round trip on the CPU backend.
constexpr unsigned kErrorEmbeddingId = 1u;       // id outside [0, V)
constexpr unsigned kErrorCrossEntropyTarget = 2u;  // target >= num_classes

// ---- elementwise_kernels.cu ------------------------------------------------
cudaError_t LaunchFill(cudaStream_t s, DevTensor out, int64_t n, double value);
// out = RoundToCompute(in, round_to) stored in out's dtype (CAST uses F32:
// plain conversion; GEMM operand/bias staging uses the compute mode).
cudaError_t LaunchConvert(cudaStream_t s, DevTensor in, DevTensor out,
                          int64_t n, MNT_ComputeMode round_to);
cudaError_t LaunchAdd(cudaStream_t s, DevTensor a, DevTensor b, DevTensor out,
                      int64_t n, float alpha, float beta);
cudaError_t LaunchActivationForward(cudaStream_t s, MNT_Activation act,
                                    DevTensor x, DevTensor y, int64_t n);
cudaError_t LaunchActivationBackward(cudaStream_t s, MNT_Activation act,
                                     DevTensor x, DevTensor dy, DevTensor dx,
                                     int64_t n);
// out = in * *inv_scale; *found_inf = 1 when any element is inf/NaN.
cudaError_t LaunchUnscale(cudaStream_t s, const float* inv_scale, DevTensor in,
                          DevTensor out, int64_t n, float* found_inf);

// The shared optimizer launch: found_inf / multiplier are device scalars
// (NULL when absent), read on the device so no step needs a host sync.
struct StepBuffers {
  DevTensor grad;
  const float* found_inf = nullptr;
  const float* multiplier = nullptr;
  float* master = nullptr;
  float* state1 = nullptr;  // momentum, or Adam m
  float* state2 = nullptr;  // Adam v
  DevTensor working;        // optional rounded copy
  int64_t n = 0;
  // ABI 1.4, AdamW only: applied-step counter on the device (NULL: the
  // coefficients passed in are used as they are).
  int32_t* step_counter = nullptr;
};
cudaError_t LaunchSgdStep(cudaStream_t s, const StepBuffers& b,
                          const SgdCoefficients& c);
// With b.step_counter, every block derives the bias corrections from
// counter + 1 on the device and a one-thread kernel afterwards increments the
// counter unless the step was skipped.
cudaError_t LaunchAdamWStep(cudaStream_t s, const StepBuffers& b,
                            const AdamWCoefficients& c);
// ABI 1.4 scalar ops, one thread each (step_math.h formulas).
cudaError_t LaunchAmpUpdateScale(cudaStream_t s, const float* found_inf,
                                 float* scale, int32_t* growth_tracker,
                                 float* inv_scale, float growth_factor,
                                 float backoff_factor, int32_t growth_interval);
cudaError_t LaunchClipCoefficient(cudaStream_t s, const float* norm_squared,
                                  const float* found_inf, float max_norm,
                                  float* multiplier);
// GEMM with K == 0: C = beta * C (+ bias rounded to `compute`).
cudaError_t LaunchGemmEmptyK(cudaStream_t s, DevTensor c, int64_t m, int64_t n,
                             float beta, DevTensor bias,
                             MNT_ComputeMode compute);

// ---- row_kernels.cu ----------------------------------------------------------
cudaError_t LaunchSoftmax(cudaStream_t s, DevTensor x, DevTensor y,
                          int64_t rows, int64_t width);
cudaError_t LaunchCrossEntropy(cudaStream_t s, DevTensor logits,
                               const int32_t* targets, float* losses,
                               DevTensor dlogits, int64_t batch, int64_t width,
                               int64_t classes, float grad_scale,
                               unsigned* error_word);
cudaError_t LaunchCountCorrect(cudaStream_t s, DevTensor logits,
                               const int32_t* targets, float* count,
                               int64_t batch, int64_t width, int64_t classes);
cudaError_t LaunchLayerNormForward(cudaStream_t s, DevTensor x, DevTensor w,
                                   DevTensor b, DevTensor y, float* mean,
                                   float* rstd, int64_t rows, int64_t c,
                                   float epsilon);
cudaError_t LaunchLayerNormBackwardInput(cudaStream_t s, DevTensor dy,
                                         DevTensor x, DevTensor w,
                                         const float* mean, const float* rstd,
                                         DevTensor dx, int64_t rows, int64_t c);
// Deterministic column sums over rows in two passes (fixed chunking, double
// accumulation): BIAS_GRAD (sum dy) and layer norm's dweight (sum dy * xhat)
// and dbias. `partials` holds ColumnSumChunks(rows) * c * 2 doubles.
int64_t ColumnSumChunks(int64_t rows);
cudaError_t LaunchBiasGrad(cudaStream_t s, DevTensor dy, DevTensor db,
                           int64_t rows, int64_t c, bool accumulate,
                           double* partials);
cudaError_t LaunchLayerNormParamGrads(cudaStream_t s, DevTensor dy,
                                      DevTensor x, const float* mean,
                                      const float* rstd, DevTensor dw,
                                      DevTensor db, int64_t rows, int64_t c,
                                      bool accumulate, double* partials);
cudaError_t LaunchEmbeddingForward(cudaStream_t s, DevTensor table,
                                   const int32_t* ids, DevTensor out,
                                   int64_t n, int64_t vocab, int64_t c,
                                   unsigned* error_word);
cudaError_t LaunchEmbeddingBackward(cudaStream_t s, DevTensor dout,
                                    const int32_t* ids, DevTensor dtable,
                                    int64_t n, int64_t vocab, int64_t c,
                                    bool accumulate, unsigned* error_word);

// ---- reduce_kernels.cu -------------------------------------------------------
enum class ReduceOp { kSum, kSumSquares, kMax };
// Number of double partials pass 1 writes for n elements (0 for n == 0).
int64_t ReducePartialCount(int64_t n);
cudaError_t LaunchReducePartials(cudaStream_t s, DevTensor x, int64_t n,
                                 ReduceOp op, double* partials);
// out = combine(partials[0..count)) / divisor, in a fixed order.
cudaError_t LaunchReduceFinish(cudaStream_t s, const double* partials,
                               int64_t count, ReduceOp op, double divisor,
                               float* out);

// ---- layer_kernels.cu --------------------------------------------------------
// Attention over qkv [B,T,3C] (llm.c layout), H heads of D = C / H.
struct AttentionDims {
  int64_t b, t, c, h, d;
  float scale;
  bool causal;
};
// Dynamic shared memory the largest fallback kernel needs (a T-long row of
// probabilities and of score gradients); the caller refuses shapes over the
// device's default 48 KiB.
size_t AttentionFallbackSharedBytes(const AttentionDims& a);
cudaError_t LaunchAttentionForward(cudaStream_t s, const AttentionDims& a,
                                   DevTensor qkv, DevTensor y, float* lse);
// `delta` is scratch of B*H*T floats (dy . y per row).
cudaError_t LaunchAttentionBackward(cudaStream_t s, const AttentionDims& a,
                                    DevTensor dy, DevTensor qkv, DevTensor y,
                                    const float* lse, DevTensor dqkv, float* delta);
cudaError_t LaunchPoolForward(cudaStream_t s, const PoolGeometry& g,
                              MNT_PoolKind kind, int64_t planes, DevTensor x,
                              DevTensor y);
cudaError_t LaunchPoolBackward(cudaStream_t s, const PoolGeometry& g,
                               MNT_PoolKind kind, int64_t planes, DevTensor dy,
                               DevTensor x, DevTensor dx);
// x viewed as [n, c, inner].
struct BatchNormDims {
  int64_t n, c, inner;
  bool training;
  float momentum, epsilon;
};
// Training: batch statistics into mean/invstd and the running update;
// inference: mean/invstd from the running statistics. Then y.
cudaError_t LaunchBatchNormForward(cudaStream_t s, const BatchNormDims& d,
                                   DevTensor x, DevTensor gamma, DevTensor beta,
                                   float* running_mean, float* running_var,
                                   float* mean, float* invstd, DevTensor y);
// `sums` is scratch of 2 * c doubles.
cudaError_t LaunchBatchNormBackward(cudaStream_t s, const BatchNormDims& d,
                                    DevTensor dy, DevTensor x, DevTensor gamma,
                                    const float* mean, const float* invstd,
                                    DevTensor dx, DevTensor dgamma, DevTensor dbeta,
                                    bool accumulate, double* sums);
// out[ch] (+)= sum of x [n, c, inner] over n and inner (conv's dbias).
cudaError_t LaunchChannelSum(cudaStream_t s, DevTensor x, int64_t n, int64_t c,
                             int64_t inner, bool accumulate, DevTensor out);
// y [n, c, inner] += bias[c] (conv's forward bias).
cudaError_t LaunchChannelBiasAdd(cudaStream_t s, DevTensor y, DevTensor bias,
                                 int64_t n, int64_t c, int64_t inner);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_KERNELS_H_

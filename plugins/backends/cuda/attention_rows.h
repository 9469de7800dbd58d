// The per-element softmax math of the GEMM attention path's row kernels
// (attention_gemm.cu), host/device so the CPU replays it
// (attention_gemm_plan_test.cc). The same formulas as the CPU backend
// (cpu/attention.cc): the scores S = Q K^T come unscaled from the GEMM and
// are scaled here; masked keys get probability 0 and score gradient 0.
//   forward:  m = max_j scale S_j over the visible keys,
//             e_j = exp(scale S_j - m), l = sum_j e_j,
//             P_j = e_j * (1 / l), lse = m + log(l);
//   backward: P_j = exp(scale S_j - lse) (recomputed from the saved lse),
//             delta = dy . y (the row's sum_j P_j dP_j),
//             dS_j = P_j (dP_j - delta); the scale goes into the dQ and dK
//             GEMMs' alpha.
// The reductions (max, sum, delta) run in each kernel's own order; the
// emulation sums in index order.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_ROWS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_ROWS_H_

#include <math.h>

#include <cstdint>

#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/layer_math.h"

namespace mnt::cuda {

// A scaled score, the operand of the row max.
MNT_HOST_DEVICE inline float AttentionScaled(float score, float scale) {
  return scale * score;
}

// exp(scale * score - shift): the unnormalised weight (shift = the row max)
// or, in the backward, the probability itself (shift = the row's lse).
MNT_HOST_DEVICE inline float AttentionExp(float score, float scale, float shift) {
  return expf(scale * score - shift);
}

// 1 / sum: the forward multiplies each weight by it (as the CPU does).
MNT_HOST_DEVICE inline float AttentionInverseSum(float sum) { return 1.0f / sum; }

// The row's logsumexp, saved for the backward.
MNT_HOST_DEVICE inline float AttentionRowLse(float max, float sum) { return max + logf(sum); }

// Probability of key `key` of a row whose keys [0, visible) are visible.
MNT_HOST_DEVICE inline float AttentionRowProb(float score, float scale, float lse, int64_t key,
                                              int64_t visible) {
  return key < visible ? AttentionExp(score, scale, lse) : 0.0f;
}

// The unscaled score gradient of key `key` (0 where masked, whatever dP).
MNT_HOST_DEVICE inline float AttentionRowScoreGrad(float prob, float prob_grad, float delta,
                                                   int64_t key, int64_t visible) {
  return key < visible ? ::mnt::AttentionScoreGrad(prob, prob_grad, delta) : 0.0f;
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_ROWS_H_

// Per-element math of FUSED_CLASSIFIER (softmax + cross-entropy + dlogits in
// one pass, in place over the logits), shared by the CPU backend and the
// CUDA kernel so both compute the same formula. A row is reduced to its max
// and its sum of exp(x - max) (online: one read, llm.c's fused_classifier),
// then every element is rewritten as its gradient.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CLASSIFIER_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CLASSIFIER_MATH_H_

#include <cmath>

#include "plugins/backends/common/host_device.h"

namespace mnt {

// A running (max, sum of exp(x - max)) over part of a row. Starts at
// (-inf, 0): the first finite element replaces the max without a NaN from
// exp(-inf - -inf).
struct SoftmaxStats {
  float max;
  float sum;
};

MNT_HOST_DEVICE inline SoftmaxStats SoftmaxStatsEmpty() {
  return {-INFINITY, 0.0f};
}

// Rescales a sum taken under max `from` to max `to` (>= from).
MNT_HOST_DEVICE inline float RescaleSum(float sum, float from, float to) {
  return sum == 0.0f ? 0.0f : sum * expf(from - to);
}

// Adds one element to the running stats.
MNT_HOST_DEVICE inline SoftmaxStats SoftmaxStatsAdd(SoftmaxStats s, float x) {
  if (x > s.max) return {x, RescaleSum(s.sum, s.max, x) + 1.0f};
  return {s.max, s.sum + expf(x - s.max)};
}

// Merges the stats of two parts of a row (a tree reduction's step).
MNT_HOST_DEVICE inline SoftmaxStats SoftmaxStatsMerge(SoftmaxStats a,
                                                      SoftmaxStats b) {
  const float max = a.max > b.max ? a.max : b.max;
  return {max, RescaleSum(a.sum, a.max, max) + RescaleSum(b.sum, b.max, max)};
}

// -log softmax(x)[target] = log(sum) - (x_target - max).
MNT_HOST_DEVICE inline float ClassifierLoss(float target_logit, float max,
                                            float log_sum) {
  return log_sum - (target_logit - max);
}

// d loss / d x_j times `scale`: (softmax_j - [j == target]) * scale, with
// softmax_j = exp(x_j - max) * inv_sum.
MNT_HOST_DEVICE inline float ClassifierGrad(float x, float max, float inv_sum,
                                            bool is_target, float scale) {
  const float p = expf(x - max) * inv_sum;
  return (p - (is_target ? 1.0f : 0.0f)) * scale;
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CLASSIFIER_MATH_H_

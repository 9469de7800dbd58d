// Per-element math of FUSED_CLASSIFIER (softmax + cross-entropy + dlogits in
// one pass, in place over the logits), shared by the CPU backend and the
// CUDA kernel so both compute the same formula. A row is reduced to its max
// and its sum of exp(x - max) (online: one read, llm.c's fused_classifier),
// then every element is rewritten as its gradient.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CLASSIFIER_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CLASSIFIER_MATH_H_

#include <cmath>

#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/tensor_access.h"

namespace mnt {

// A running (max, sum of exp(x - max)) over part of a row. Starts at
// (-inf, 0): the first finite element replaces the max without a NaN from
// exp(-inf - -inf).
struct RunningSoftmax {
  float max;
  float sum;
};

MNT_HOST_DEVICE inline RunningSoftmax SoftmaxStatsEmpty() {
  return {-INFINITY, 0.0f};
}

// Rescales a sum taken under max `from` to max `to` (>= from).
MNT_HOST_DEVICE inline float RescaleSum(float sum, float from, float to) {
  return sum == 0.0f ? 0.0f : sum * expf(from - to);
}

// Adds one element to the running stats.
MNT_HOST_DEVICE inline RunningSoftmax SoftmaxStatsAdd(RunningSoftmax s, float x) {
  if (x > s.max) return {x, RescaleSum(s.sum, s.max, x) + 1.0f};
  return {s.max, s.sum + expf(x - s.max)};
}

// Merges the stats of two parts of a row (a tree reduction's step).
MNT_HOST_DEVICE inline RunningSoftmax SoftmaxStatsMerge(RunningSoftmax a,
                                                      RunningSoftmax b) {
  const float max = a.max > b.max ? a.max : b.max;
  return {max, RescaleSum(a.sum, a.max, max) + RescaleSum(b.sum, b.max, max)};
}

// -log softmax(x)[target] = log(sum) - (x_target - max).
MNT_HOST_DEVICE inline float ClassifierLoss(float target_logit, float max,
                                            float log_sum) {
  return log_sum - (target_logit - max);
}

// Each element's gradient is tensor_access.h's CrossEntropyGradient.

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CLASSIFIER_MATH_H_

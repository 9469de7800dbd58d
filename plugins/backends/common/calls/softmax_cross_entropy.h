// The contracts of SOFTMAX, CROSS_ENTROPY, COUNT_CORRECT and FUSED_CLASSIFIER (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. Target values
// live in device memory: their range against num_classes is the kernel's to
// check (on the CPU before writing anything, on CUDA on the device).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_SOFTMAX_CROSS_ENTROPY_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_SOFTMAX_CROSS_ENTROPY_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// y = softmax over the last dim of x, viewed as [rows, width].
struct SoftmaxCall : TypedCall {
  Operand x, y;
  int64_t rows = 0, width = 0;
};
sdk::Status CheckSoftmax(const OpCall& call, SoftmaxCall* out);

// logits [batch, width] (columns >= classes are padding), targets I32 [batch].
struct LogitsAndTargets {
  Operand logits, targets;
  int64_t batch = 0, width = 0, classes = 0;
};

// losses F32 [batch]; optional dlogits [batch, width] scaled by grad_scale,
// times the optional device grad_multiplier F32 [1] (since ABI 1.6; the
// kernel forms the fp32 product grad_multiplier[0] * grad_scale once).
struct CrossEntropyCall : TypedCall, LogitsAndTargets {
  Operand losses, dlogits;
  Operand grad_multiplier;
  float grad_scale = 1.0f;
};
sdk::Status CheckCrossEntropy(const OpCall& call, CrossEntropyCall* out);

// count F32[1] = rows whose argmax over the classes equals the target.
struct CountCorrectCall : TypedCall, LogitsAndTargets {
  Operand count;
};
sdk::Status CheckCountCorrect(const OpCall& call, CountCorrectCall* out);

// logits (out[0], read then overwritten with dlogits) against targets
// (in[0]); losses F32 [batch]; optional multiplier F32 [1] (in[1]) and mean
// F32 [1] (out[2]).
struct FusedClassifierCall : TypedCall, LogitsAndTargets {
  Operand multiplier, losses, mean;
  float grad_scale = 1.0f;
};
sdk::Status CheckFusedClassifier(const OpCall& call, FusedClassifierCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_SOFTMAX_CROSS_ENTROPY_H_

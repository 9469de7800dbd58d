// Mantissa plugin SDK: every MNT_Op in one list, for code that has to name
// or handle each op (sdk::OpName; a backend's dispatch and op-support query,
// plugins/backends/common/op_dispatch.h).
//
// MNT_FOR_EACH_OP(X) expands X(NAME, Name) once per op, in enum order: NAME
// is the enumerator's suffix (MNT_OP_##NAME), Name its CamelCase spelling for
// generated identifiers (in-tree backends: Name##Call, Check##Name and the
// kernel method Name). An op appended to plugins/abi/mnt_backend.h and not
// listed here, or listed out of order, fails to compile (checks below).
#ifndef MANTISSA_PLUGINS_SDK_OP_LIST_H_
#define MANTISSA_PLUGINS_SDK_OP_LIST_H_

#include <cstddef>

#include "plugins/abi/mnt_backend.h"

#define MNT_FOR_EACH_OP(X)                              \
  X(FILL, Fill)                                         \
  X(CAST, Cast)                                         \
  X(GEMM, Gemm)                                         \
  X(BIAS_GRAD, BiasGrad)                                \
  X(ACTIVATION_FORWARD, ActivationForward)              \
  X(ACTIVATION_BACKWARD, ActivationBackward)            \
  X(ADD, Add)                                           \
  X(SOFTMAX, Softmax)                                   \
  X(CROSS_ENTROPY, CrossEntropy)                        \
  X(LAYERNORM_FORWARD, LayerNormForward)                \
  X(LAYERNORM_BACKWARD, LayerNormBackward)              \
  X(EMBEDDING_FORWARD, EmbeddingForward)                \
  X(EMBEDDING_BACKWARD, EmbeddingBackward)              \
  X(REDUCE, Reduce)                                     \
  X(COUNT_CORRECT, CountCorrect)                        \
  X(GLOBAL_NORM_SQUARED, GlobalNormSquared)             \
  X(NONFINITE_CHECK_UNSCALE, NonfiniteCheckUnscale)     \
  X(SGD_STEP, SgdStep)                                  \
  X(ADAMW_STEP, AdamWStep)                              \
  X(ATTENTION_FORWARD, AttentionForward)                \
  X(ATTENTION_BACKWARD, AttentionBackward)              \
  X(CONV2D_FORWARD, Conv2dForward)                      \
  X(CONV2D_BACKWARD_DATA, Conv2dBackwardData)           \
  X(CONV2D_BACKWARD_FILTER, Conv2dBackwardFilter)       \
  X(POOL2D_FORWARD, Pool2dForward)                      \
  X(POOL2D_BACKWARD, Pool2dBackward)                    \
  X(BATCHNORM_FORWARD, BatchNormForward)                \
  X(BATCHNORM_BACKWARD, BatchNormBackward)              \
  X(AMP_UPDATE_SCALE, AmpUpdateScale)                   \
  X(CLIP_COEFFICIENT, ClipCoefficient)                  \
  X(GEMM_BIAS_GELU, GemmBiasGelu)                       \
  X(GEMM_DGELU, GemmDgelu)                              \
  X(GEMM_BIAS_GRAD, GemmBiasGrad)                       \
  X(FUSED_CLASSIFIER, FusedClassifier)                  \
  X(RESIDUAL_LAYERNORM_FORWARD, ResidualLayerNormForward) \
  X(RESIDUAL_LAYERNORM_BACKWARD, ResidualLayerNormBackward) \
  X(MULTI_ADAMW_STEP, MultiAdamWStep)                   \
  X(MULTI_SGD_STEP, MultiSgdStep)                       \
  X(SCALED_CAST, ScaledCast)                            \
  X(SCALED_GEMM, ScaledGemm)                            \
  X(FP8_SCALE_UPDATE, Fp8ScaleUpdate)                    \
  X(TENSOR_STATS, TensorStats)                          \
  X(ADAMW8BIT_STEP, AdamW8bitStep)                      \
  X(ADAFACTOR_STEP, AdafactorStep)                       \
  X(MULTI_ADAMW8BIT_STEP, MultiAdamW8bitStep)            \
  X(MULTI_ADAFACTOR_STEP, MultiAdafactorStep)

namespace mnt::sdk {

#define MNT_OP_LIST_ENUMERATOR_(NAME, Name) MNT_OP_##NAME,
// Every op, in enum order (MNT_OP_FILL first).
inline constexpr MNT_Op kAllOps[] = {MNT_FOR_EACH_OP(MNT_OP_LIST_ENUMERATOR_)};
#undef MNT_OP_LIST_ENUMERATOR_
inline constexpr size_t kNumOps = sizeof(kAllOps) / sizeof(kAllOps[0]);

namespace op_list_internal {
constexpr bool InEnumOrderWithoutGaps() {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (kAllOps[i] != static_cast<MNT_Op>(i + 1)) return false;
  }
  return true;
}
}  // namespace op_list_internal
static_assert(op_list_internal::InEnumOrderWithoutGaps(),
              "MNT_FOR_EACH_OP must list the MNT_Op values from MNT_OP_FILL "
              "on, in enum order, without gaps");

// True for the values MNT_FOR_EACH_OP lists (what this SDK's ABI knows).
inline constexpr bool IsKnownOp(MNT_Op op) {
  return op >= MNT_OP_FILL && static_cast<size_t>(op) <= kNumOps;
}

// "GEMM" for MNT_OP_GEMM; "UNKNOWN_OP" for a value the list does not have.
// The switch has no default and -Wswitch is an error here, so an MNT_Op
// enumerator missing from MNT_FOR_EACH_OP does not compile.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
inline const char* OpName(MNT_Op op) {
#define MNT_OP_LIST_NAME_CASE_(NAME, Name) \
  case MNT_OP_##NAME:                      \
    return #NAME;
  switch (op) {
    case MNT_OP_INVALID:
      break;
    MNT_FOR_EACH_OP(MNT_OP_LIST_NAME_CASE_)
  }
#undef MNT_OP_LIST_NAME_CASE_
  return "UNKNOWN_OP";
}
#pragma GCC diagnostic pop

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_OP_LIST_H_

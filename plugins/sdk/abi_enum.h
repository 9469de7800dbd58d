// Mantissa plugin SDK: reading an enum that came through the C ABI.
//
// A C enum field may hold any int32 the other side wrote (a newer minor's
// value, garbage). Loading a value outside the enumerators' range as the
// enum type is undefined behaviour in C++ (UBSan: -fsanitize=enum), even
// just to compare it. So a value from the other side is read as its int32
// (RawEnum) and checked against the list of enumerators this SDK knows
// (ReadEnum / IsKnownEnum) before anything uses it as the enum.
//
// Each list below is checked against its C enum at compile time: a switch
// over the enum with one case per listed value, no default, and -Wswitch an
// error, so an enumerator appended to plugins/abi and not added here fails
// to build (the op list, MNT_FOR_EACH_OP, has its own checks in op_list.h).
#ifndef MANTISSA_PLUGINS_SDK_ABI_ENUM_H_
#define MANTISSA_PLUGINS_SDK_ABI_ENUM_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/op_list.h"

#define MNT_FOR_EACH_ERROR_CODE(X)                                          \
  X(MNT_ERROR_OK) X(MNT_ERROR_CANCELLED) X(MNT_ERROR_UNKNOWN)               \
  X(MNT_ERROR_INVALID_ARGUMENT) X(MNT_ERROR_DEADLINE_EXCEEDED)              \
  X(MNT_ERROR_NOT_FOUND) X(MNT_ERROR_ALREADY_EXISTS)                        \
  X(MNT_ERROR_PERMISSION_DENIED) X(MNT_ERROR_RESOURCE_EXHAUSTED)            \
  X(MNT_ERROR_FAILED_PRECONDITION) X(MNT_ERROR_ABORTED)                     \
  X(MNT_ERROR_OUT_OF_RANGE) X(MNT_ERROR_UNIMPLEMENTED) X(MNT_ERROR_INTERNAL) \
  X(MNT_ERROR_UNAVAILABLE) X(MNT_ERROR_DATA_LOSS) X(MNT_ERROR_UNAUTHENTICATED)

#define MNT_FOR_EACH_DTYPE(X)                                                  \
  X(MNT_DTYPE_INVALID) X(MNT_DTYPE_F32) X(MNT_DTYPE_F16) X(MNT_DTYPE_BF16)     \
  X(MNT_DTYPE_I32) X(MNT_DTYPE_U8) X(MNT_DTYPE_F64) X(MNT_DTYPE_F8_E4M3)        \
  X(MNT_DTYPE_F8_E5M2)

#define MNT_FOR_EACH_COMPUTE_MODE(X)                                          \
  X(MNT_COMPUTE_INVALID) X(MNT_COMPUTE_F32) X(MNT_COMPUTE_TF32)               \
  X(MNT_COMPUTE_BF16) X(MNT_COMPUTE_F16)

#define MNT_FOR_EACH_PLUGIN_KIND(X)                                           \
  X(MNT_PLUGIN_KIND_INVALID) X(MNT_PLUGIN_KIND_BACKEND)                       \
  X(MNT_PLUGIN_KIND_PRECISION) X(MNT_PLUGIN_KIND_MODEL)

#define MNT_FOR_EACH_MEMORY_CATEGORY(X)                                       \
  X(MNT_MEMORY_WEIGHTS) X(MNT_MEMORY_MASTER_WEIGHTS) X(MNT_MEMORY_GRADIENTS)  \
  X(MNT_MEMORY_OPTIMIZER_STATE) X(MNT_MEMORY_ACTIVATIONS)                     \
  X(MNT_MEMORY_WORKSPACE) X(MNT_MEMORY_DATA) X(MNT_MEMORY_CATEGORY_COUNT)     \
  X(MNT_MEMORY_ALL)

#define MNT_FOR_EACH_COPY_KIND(X) \
  X(MNT_COPY_HOST_TO_DEVICE) X(MNT_COPY_DEVICE_TO_HOST) X(MNT_COPY_DEVICE_TO_DEVICE)

#define MNT_FOR_EACH_ACTIVATION(X)                                            \
  X(MNT_ACTIVATION_INVALID) X(MNT_ACTIVATION_IDENTITY) X(MNT_ACTIVATION_RELU)  \
  X(MNT_ACTIVATION_GELU_TANH)

#define MNT_FOR_EACH_REDUCE_KIND(X) \
  X(MNT_REDUCE_INVALID) X(MNT_REDUCE_SUM) X(MNT_REDUCE_MEAN) X(MNT_REDUCE_MAX)

#define MNT_FOR_EACH_POOL_KIND(X) X(MNT_POOL_INVALID) X(MNT_POOL_MAX) X(MNT_POOL_AVG)

#define MNT_FOR_EACH_OP_CLASS(X)                                              \
  X(MNT_OP_CLASS_INVALID) X(MNT_OP_CLASS_MATMUL) X(MNT_OP_CLASS_ELEMENTWISE)  \
  X(MNT_OP_CLASS_NORMALIZATION) X(MNT_OP_CLASS_SOFTMAX) X(MNT_OP_CLASS_LOSS)  \
  X(MNT_OP_CLASS_REDUCTION) X(MNT_OP_CLASS_OPTIMIZER) X(MNT_OP_CLASS_EMBEDDING)

#define MNT_FOR_EACH_LOSS_SCALING(X) \
  X(MNT_LOSS_SCALING_NONE) X(MNT_LOSS_SCALING_DYNAMIC) X(MNT_LOSS_SCALING_STATIC)

#define MNT_FOR_EACH_LOSS_SCALE_RECIPE(X) \
  X(MNT_LOSS_SCALE_RECIPE_NONE) X(MNT_LOSS_SCALE_RECIPE_DYNAMIC)

#define MNT_FOR_EACH_PARAM_INIT(X)                                            \
  X(MNT_PARAM_INIT_INVALID) X(MNT_PARAM_INIT_ZEROS) X(MNT_PARAM_INIT_ONES)    \
  X(MNT_PARAM_INIT_NORMAL) X(MNT_PARAM_INIT_UNIFORM)

#define MNT_FOR_EACH_PARAM_ROLE(X) X(MNT_PARAM_ROLE_OTHER) X(MNT_PARAM_ROLE_EMBEDDING)

#define MNT_FOR_EACH_DATA_KIND(X)                                             \
  X(MNT_DATA_KIND_INVALID) X(MNT_DATA_KIND_FEATURES) X(MNT_DATA_KIND_IMAGES)  \
  X(MNT_DATA_KIND_TOKENS)

#define MNT_FOR_EACH_ROUNDING(X) X(MNT_ROUNDING_NEAREST_EVEN) X(MNT_ROUNDING_STOCHASTIC)

#define MNT_FOR_EACH_EXTENSION_TYPE(X)                                        \
  X(MNT_EXTENSION_TYPE_NONE) X(MNT_EXTENSION_TYPE_CAPABILITIES)               \
  X(MNT_EXTENSION_TYPE_COLLECTIVES) X(MNT_EXTENSION_TYPE_MODEL_DATA)

#define MNT_FOR_EACH_CAPABILITY(X)                                            \
  X(MNT_CAPABILITY_INVALID) X(MNT_CAPABILITY_ADAMW_STEP_COUNTER)              \
  X(MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE)                                   \
  X(MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER)                             \
  X(MNT_CAPABILITY_OPTIMIZER_DEVICE_LR) X(MNT_CAPABILITY_STOCHASTIC_ROUNDING) \
  X(MNT_CAPABILITY_PRECISION_OPTIONS)                                         \
  X(MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER)                              \
  X(MNT_CAPABILITY_MODEL_FP8_GEMMS) X(MNT_CAPABILITY_OPTIMIZER_PIECES)       \
  X(MNT_CAPABILITY_MODEL_GRADIENT_READY)                                      \
  X(MNT_CAPABILITY_MODEL_FROZEN_PARAMS) X(MNT_CAPABILITY_MODEL_LORA)

#define MNT_FOR_EACH_AMAX_ALGO(X) \
  X(MNT_AMAX_ALGO_INVALID) X(MNT_AMAX_ALGO_MAX) X(MNT_AMAX_ALGO_MOST_RECENT)

#define MNT_FOR_EACH_SCALING_RECIPE(X) \
  X(MNT_SCALING_RECIPE_NONE) X(MNT_SCALING_RECIPE_DELAYED) X(MNT_SCALING_RECIPE_CURRENT)

// The collectives extension's (mnt_collectives.h). Its reduce op is
// MNT_ReduceOp (MNT_REDUCE_OP_*), not the REDUCE op's MNT_ReduceKind
// (MNT_REDUCE_*, above): hence COLLECTIVE_REDUCE_OP in the list's name.
#define MNT_FOR_EACH_COLLECTIVE_OP(X)                                          \
  X(MNT_COLLECTIVE_INVALID) X(MNT_COLLECTIVE_ALL_REDUCE)                       \
  X(MNT_COLLECTIVE_REDUCE_SCATTER) X(MNT_COLLECTIVE_ALL_GATHER)                \
  X(MNT_COLLECTIVE_BROADCAST)

#define MNT_FOR_EACH_COLLECTIVE_REDUCE_OP(X) \
  X(MNT_REDUCE_OP_INVALID) X(MNT_REDUCE_OP_SUM) X(MNT_REDUCE_OP_AVG) X(MNT_REDUCE_OP_MAX)

namespace mnt::sdk {

// Specialised below for every ABI enum: kValues, every enumerator, and
// Name(value), its spelling (nullptr for a value not listed).
template <typename E>
struct AbiEnum;

#define MNT_ABI_ENUM_VALUE_(V) V,
#define MNT_ABI_ENUM_CASE_(V) \
  case V:                     \
    return #V;
// The switch over E has every listed value as a case and no default: with
// -Wswitch an error, an enumerator of E that the list lacks does not compile.
#define MNT_ABI_ENUM_(E, LIST)                                   \
  template <>                                                    \
  struct AbiEnum<E> {                                            \
    static constexpr E kValues[] = {LIST(MNT_ABI_ENUM_VALUE_)};  \
    static constexpr const char* Name(E value) {                 \
      switch (value) { LIST(MNT_ABI_ENUM_CASE_) }                \
      return nullptr;                                            \
    }                                                            \
  };

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
MNT_ABI_ENUM_(MNT_ErrorCode, MNT_FOR_EACH_ERROR_CODE)
MNT_ABI_ENUM_(MNT_DType, MNT_FOR_EACH_DTYPE)
MNT_ABI_ENUM_(MNT_ComputeMode, MNT_FOR_EACH_COMPUTE_MODE)
MNT_ABI_ENUM_(MNT_PluginKind, MNT_FOR_EACH_PLUGIN_KIND)
MNT_ABI_ENUM_(MNT_MemoryCategory, MNT_FOR_EACH_MEMORY_CATEGORY)
MNT_ABI_ENUM_(MNT_CopyKind, MNT_FOR_EACH_COPY_KIND)
MNT_ABI_ENUM_(MNT_Activation, MNT_FOR_EACH_ACTIVATION)
MNT_ABI_ENUM_(MNT_ReduceKind, MNT_FOR_EACH_REDUCE_KIND)
MNT_ABI_ENUM_(MNT_PoolKind, MNT_FOR_EACH_POOL_KIND)
MNT_ABI_ENUM_(MNT_OpClass, MNT_FOR_EACH_OP_CLASS)
MNT_ABI_ENUM_(MNT_LossScaling, MNT_FOR_EACH_LOSS_SCALING)
MNT_ABI_ENUM_(MNT_LossScaleRecipe, MNT_FOR_EACH_LOSS_SCALE_RECIPE)
MNT_ABI_ENUM_(MNT_ParamInit, MNT_FOR_EACH_PARAM_INIT)
MNT_ABI_ENUM_(MNT_ParamRole, MNT_FOR_EACH_PARAM_ROLE)
MNT_ABI_ENUM_(MNT_DataKind, MNT_FOR_EACH_DATA_KIND)
MNT_ABI_ENUM_(MNT_Rounding, MNT_FOR_EACH_ROUNDING)
MNT_ABI_ENUM_(MNT_ExtensionType, MNT_FOR_EACH_EXTENSION_TYPE)
MNT_ABI_ENUM_(MNT_Capability, MNT_FOR_EACH_CAPABILITY)
MNT_ABI_ENUM_(MNT_AmaxAlgo, MNT_FOR_EACH_AMAX_ALGO)
MNT_ABI_ENUM_(MNT_ScalingRecipe, MNT_FOR_EACH_SCALING_RECIPE)
MNT_ABI_ENUM_(MNT_CollectiveOp, MNT_FOR_EACH_COLLECTIVE_OP)
MNT_ABI_ENUM_(MNT_ReduceOp, MNT_FOR_EACH_COLLECTIVE_REDUCE_OP)
#pragma GCC diagnostic pop

#undef MNT_ABI_ENUM_
#undef MNT_ABI_ENUM_CASE_

// The op list is the ops' own (op_list.h, checked there); INVALID added.
#define MNT_ABI_ENUM_OP_VALUE_(NAME, Name) MNT_OP_##NAME,
template <>
struct AbiEnum<MNT_Op> {
  static constexpr MNT_Op kValues[] = {MNT_OP_INVALID,
                                       MNT_FOR_EACH_OP(MNT_ABI_ENUM_OP_VALUE_)};
  static constexpr const char* Name(MNT_Op op) {
    return op == MNT_OP_INVALID ? "MNT_OP_INVALID" : OpName(op);
  }
};
#undef MNT_ABI_ENUM_OP_VALUE_
#undef MNT_ABI_ENUM_VALUE_

// The int32 a field of enum type holds, read without loading it as the
// enum. Every ABI enum is int-sized (C gives these enums int's width).
template <typename E>
inline int32_t RawEnum(const E& field) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int32_t),
                "ABI enums are read as int32");
  int32_t value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

// Whether `value` is one of E's enumerators that this SDK knows.
template <typename E>
constexpr bool IsKnownEnum(int32_t value) {
  for (E e : AbiEnum<E>::kValues) {
    if (static_cast<int32_t>(e) == value) return true;
  }
  return false;
}

// The field as E when it holds a known enumerator; nullopt otherwise (then
// report RawEnum(field), never the field itself).
template <typename E>
inline std::optional<E> ReadEnum(const E& field) {
  const int32_t value = RawEnum(field);
  if (!IsKnownEnum<E>(value)) return std::nullopt;
  return static_cast<E>(value);
}

// The name of a known enumerator of E without its `prefix` (which every
// enumerator of E has), as messages show it; nullptr for a value not listed.
template <typename E>
constexpr const char* EnumNameAfter(int32_t value, const char* prefix) {
  if (!IsKnownEnum<E>(value)) return nullptr;
  const char* name = AbiEnum<E>::Name(static_cast<E>(value));
  while (*prefix != '\0' && *name == *prefix) ++name, ++prefix;
  return name;
}

// A collective op as the backends, the SDK client and the tools name it in
// messages: "ALL_REDUCE", "REDUCE_SCATTER", "ALL_GATHER", "BROADCAST" (and
// "INVALID"); nullptr for a value not listed. Takes the raw int32 (RawEnum)
// of a field a caller wrote.
constexpr const char* CollectiveOpName(int32_t op) {
  return EnumNameAfter<MNT_CollectiveOp>(op, "MNT_COLLECTIVE_");
}
// A collective's reduce op: "SUM", "AVG", "MAX" (and "INVALID"); nullptr
// for a value not listed.
constexpr const char* CollectiveReduceOpName(int32_t reduce) {
  return EnumNameAfter<MNT_ReduceOp>(reduce, "MNT_REDUCE_OP_");
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_ABI_ENUM_H_

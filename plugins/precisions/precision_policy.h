// Mantissa precision plugins: the static policy tables (which dtype each kind
// of tensor is stored in, how each op class computes, bytes per parameter).
// Pure data; the C entry points in precision_plugins.cc only translate.
#ifndef MANTISSA_PLUGINS_PRECISIONS_PRECISION_POLICY_H_
#define MANTISSA_PLUGINS_PRECISIONS_PRECISION_POLICY_H_

#include <cstdint>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/status.h"

namespace mnt::precision {

enum class PrecisionKind { kFp32, kTf32, kBf16, kFp16, kFp8 };

// The tensor-level policy (MNT_Precision_GetPolicy).
struct PrecisionPolicy {
  const char* name;  // plugin name: "fp32", "tf32", "bf16", "fp16", "fp8"
  const char* description;
  MNT_DType weight_dtype;
  MNT_DType master_weight_dtype;  // INVALID: working weights are the master
  MNT_DType gradient_dtype;
  MNT_DType activation_dtype;
  MNT_DType optimizer_state_dtype;
  MNT_ComputeMode matmul_compute;
  MNT_LossScaling default_loss_scaling;
  // Only fp16 needs loss scaling: bf16 shares fp32's exponent range, so its
  // gradients do not underflow. The others refuse dynamic/static modes.
  bool supports_loss_scaling;
  // The scaled format MATMUL computes in where the GEMM can (fp8: F8_E4M3,
  // its scales declared by Precision_GetScalingRecipe; GEMMs that cannot,
  // e.g. convolutions and attention's batched products, use
  // matmul_compute). INVALID: no scaled formats.
  MNT_DType scaled_matmul_dtype = MNT_DTYPE_INVALID;
};

// How one op class stores, computes and accumulates
// (MNT_Precision_GetOpClassPolicy).
struct OpClassPolicy {
  MNT_DType storage_dtype;
  MNT_DType compute_dtype;
  MNT_DType accumulate_dtype;
  MNT_ComputeMode compute_mode;
};

// Bytes kept per parameter (MNT_Precision_GetMemoryPlan).
struct MemoryPlan {
  int32_t bytes_weights;
  int32_t bytes_master_weights;
  int32_t bytes_gradients;
  int32_t bytes_master_gradients;
  int32_t bytes_optimizer_state;
};

const PrecisionPolicy& PolicyFor(PrecisionKind kind);

// Unknown or INVALID op classes are an InvalidArgument error. `op_class` is
// the caller's raw int32 (sdk::RawEnum), so any value is safe to pass.
sdk::Status OpClassPolicyFor(const PrecisionPolicy& policy, int32_t op_class,
                             OpClassPolicy* out);

// optimizer_state_slots: fp32-sized state tensors per parameter (>= 0).
sdk::Status MemoryPlanFor(const PrecisionPolicy& policy,
                          int32_t optimizer_state_slots, MemoryPlan* out);

}  // namespace mnt::precision

#endif  // MANTISSA_PLUGINS_PRECISIONS_PRECISION_POLICY_H_

#include "plugins/precisions/precision_policy.h"

#include "plugins/sdk/tensor.h"

namespace mnt::precision {
namespace {

constexpr PrecisionPolicy kFp32{
    "fp32", "fp32 everywhere (the baseline)",
    MNT_DTYPE_F32, MNT_DTYPE_INVALID, MNT_DTYPE_F32, MNT_DTYPE_F32,
    MNT_DTYPE_F32, MNT_COMPUTE_F32, MNT_LOSS_SCALING_NONE, false};

constexpr PrecisionPolicy kTf32{
    "tf32", "fp32 storage, GEMM operands rounded to tf32",
    MNT_DTYPE_F32, MNT_DTYPE_INVALID, MNT_DTYPE_F32, MNT_DTYPE_F32,
    MNT_DTYPE_F32, MNT_COMPUTE_TF32, MNT_LOSS_SCALING_NONE, false};

constexpr PrecisionPolicy kBf16{
    "bf16", "bf16 mixed precision: bf16 weights/activations/grads, fp32 master",
    MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_BF16,
    MNT_DTYPE_F32, MNT_COMPUTE_BF16, MNT_LOSS_SCALING_NONE, false};

constexpr PrecisionPolicy kFp16{
    "fp16",
    "fp16 mixed precision: fp16 weights/activations/grads, fp32 master, "
    "dynamic loss scaling",
    MNT_DTYPE_F16, MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_F16,
    MNT_DTYPE_F32, MNT_COMPUTE_F16, MNT_LOSS_SCALING_DYNAMIC, true};

// bf16's policy with FP8 GEMMs (Transformer Engine's recipe): the GEMMs
// that can quantize their operands to FP8 with per-tensor scales, the rest
// fall back to bf16 (matmul_compute), which is also what the working
// weights, activations and gradients are stored in between ops. No loss
// scaling: the per-tensor scales keep FP8's range, bf16 the rest.
constexpr PrecisionPolicy kFp8{
    "fp8",
    "fp8 mixed precision: bf16 weights/activations/grads, fp32 master, FP8 "
    "GEMMs (E4M3 forward, E5M2 gradients) with Transformer Engine's delayed "
    "scaling",
    MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_BF16,
    MNT_DTYPE_F32, MNT_COMPUTE_BF16, MNT_LOSS_SCALING_NONE, false,
    MNT_DTYPE_F8_E4M3};

// The dtype GEMM operands are rounded to; tf32 has no storage dtype of its
// own, so it reports F32 and says TF32 in compute_mode.
MNT_DType MatmulComputeDType(MNT_ComputeMode mode) {
  switch (mode) {
    case MNT_COMPUTE_BF16: return MNT_DTYPE_BF16;
    case MNT_COMPUTE_F16: return MNT_DTYPE_F16;
    default: return MNT_DTYPE_F32;
  }
}

}  // namespace

const PrecisionPolicy& PolicyFor(PrecisionKind kind) {
  switch (kind) {
    case PrecisionKind::kFp32: return kFp32;
    case PrecisionKind::kTf32: return kTf32;
    case PrecisionKind::kBf16: return kBf16;
    case PrecisionKind::kFp16: return kFp16;
    case PrecisionKind::kFp8: return kFp8;
  }
  return kFp32;
}

// After PyTorch autocast: matmuls take 16-bit operands and accumulate in
// fp32; everything else computes in fp32. Storage follows what the output
// feeds: elementwise, norm, softmax and embedding outputs feed the next
// matmul (which rounds its operands to 16 bits anyway), so they are kept in
// the activation dtype; losses, reductions and optimizer state are consumed
// in fp32 and stored in fp32 (a 16-bit loss would lose the small per-example
// values and fp16 would overflow sums).
sdk::Status OpClassPolicyFor(const PrecisionPolicy& policy, int32_t op_class,
                             OpClassPolicy* out) {
  const MNT_DType act = policy.activation_dtype;
  const MNT_DType f32 = MNT_DTYPE_F32;
  switch (op_class) {
    case MNT_OP_CLASS_MATMUL:
      // A scaled format (fp8) is what MATMUL computes in; compute_mode
      // stays the fallback for GEMMs that cannot run in it.
      *out = {act,
              policy.scaled_matmul_dtype != MNT_DTYPE_INVALID
                  ? policy.scaled_matmul_dtype
                  : MatmulComputeDType(policy.matmul_compute),
              f32, policy.matmul_compute};
      return sdk::Status::Ok();
    case MNT_OP_CLASS_ELEMENTWISE:
    case MNT_OP_CLASS_NORMALIZATION:
    case MNT_OP_CLASS_SOFTMAX:
    case MNT_OP_CLASS_EMBEDDING:
      *out = {act, f32, f32, MNT_COMPUTE_F32};
      return sdk::Status::Ok();
    case MNT_OP_CLASS_LOSS:
    case MNT_OP_CLASS_REDUCTION:
    case MNT_OP_CLASS_OPTIMIZER:
      *out = {f32, f32, f32, MNT_COMPUTE_F32};
      return sdk::Status::Ok();
    default:
      return sdk::InvalidArgument(sdk::Format(
          "%s precision: unknown op class %d", policy.name, op_class));
  }
}

sdk::Status MemoryPlanFor(const PrecisionPolicy& policy,
                          int32_t optimizer_state_slots, MemoryPlan* out) {
  if (optimizer_state_slots < 0 || optimizer_state_slots > 64) {
    return sdk::InvalidArgument(sdk::Format(
        "%s precision: optimizer_state_slots=%d is outside [0, 64]",
        policy.name, optimizer_state_slots));
  }
  const bool has_master = policy.master_weight_dtype != MNT_DTYPE_INVALID;
  out->bytes_weights = static_cast<int32_t>(sdk::DTypeSize(policy.weight_dtype));
  out->bytes_master_weights =
      has_master ? static_cast<int32_t>(sdk::DTypeSize(policy.master_weight_dtype))
                 : 0;
  out->bytes_gradients =
      static_cast<int32_t>(sdk::DTypeSize(policy.gradient_dtype));
  // With 16-bit grads the trainer unscales and accumulates into an fp32 copy.
  out->bytes_master_gradients = has_master ? 4 : 0;
  out->bytes_optimizer_state =
      optimizer_state_slots *
      static_cast<int32_t>(sdk::DTypeSize(policy.optimizer_state_dtype));
  return sdk::Status::Ok();
}

}  // namespace mnt::precision

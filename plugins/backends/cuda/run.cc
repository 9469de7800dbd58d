#include "plugins/backends/cuda/run.h"

#include "plugins/backends/cuda/op_call.h"
#include "plugins/backends/cuda/ops.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

using Kernel = Status (*)(CudaBackend&, const OpCall&);

Kernel KernelFor(MNT_Op op) {
  switch (op) {
    case MNT_OP_FILL: return RunFill;
    case MNT_OP_CAST: return RunCast;
    case MNT_OP_GEMM: return RunGemm;
    case MNT_OP_BIAS_GRAD: return RunBiasGrad;
    case MNT_OP_ACTIVATION_FORWARD: return RunActivationForward;
    case MNT_OP_ACTIVATION_BACKWARD: return RunActivationBackward;
    case MNT_OP_ADD: return RunAdd;
    case MNT_OP_SOFTMAX: return RunSoftmax;
    case MNT_OP_CROSS_ENTROPY: return RunCrossEntropy;
    case MNT_OP_LAYERNORM_FORWARD: return RunLayerNormForward;
    case MNT_OP_LAYERNORM_BACKWARD: return RunLayerNormBackward;
    case MNT_OP_EMBEDDING_FORWARD: return RunEmbeddingForward;
    case MNT_OP_EMBEDDING_BACKWARD: return RunEmbeddingBackward;
    case MNT_OP_REDUCE: return RunReduce;
    case MNT_OP_COUNT_CORRECT: return RunCountCorrect;
    case MNT_OP_GLOBAL_NORM_SQUARED: return RunGlobalNormSquared;
    case MNT_OP_NONFINITE_CHECK_UNSCALE: return RunNonfiniteCheckUnscale;
    case MNT_OP_SGD_STEP: return RunSgdStep;
    case MNT_OP_ADAMW_STEP: return RunAdamWStep;
    case MNT_OP_ATTENTION_FORWARD: return RunAttentionForward;
    case MNT_OP_ATTENTION_BACKWARD: return RunAttentionBackward;
    case MNT_OP_CONV2D_FORWARD: return RunConv2dForward;
    case MNT_OP_CONV2D_BACKWARD_DATA: return RunConv2dBackwardData;
    case MNT_OP_CONV2D_BACKWARD_FILTER: return RunConv2dBackwardFilter;
    case MNT_OP_POOL2D_FORWARD: return RunPool2dForward;
    case MNT_OP_POOL2D_BACKWARD: return RunPool2dBackward;
    case MNT_OP_BATCHNORM_FORWARD: return RunBatchNormForward;
    case MNT_OP_BATCHNORM_BACKWARD: return RunBatchNormBackward;
    case MNT_OP_AMP_UPDATE_SCALE: return RunAmpUpdateScale;
    case MNT_OP_CLIP_COEFFICIENT: return RunClipCoefficient;
    default: return nullptr;
  }
}

// The view is well formed and, when present, lies in this backend's memory
// (catches host pointers and use-after-free before a kernel faults).
Status CheckTensor(const CudaBackend& backend, const char* op, const char* dir,
                   size_t i, const MNT_Tensor& t) {
  if (t.struct_size < MNT_Tensor_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s[%zu].struct_size %zu is smaller than %zu", op, dir, i,
        t.struct_size, static_cast<size_t>(MNT_Tensor_STRUCT_SIZE)));
  }
  if (t.rank < 0 || t.rank > MNT_MAX_RANK) {
    return sdk::InvalidArgument(sdk::Format("%s: %s[%zu] has rank %d, expected 0..%d",
                                            op, dir, i, t.rank, MNT_MAX_RANK));
  }
  for (int d = 0; d < t.rank; ++d) {
    if (t.dims[d] < 0) {
      return sdk::InvalidArgument(sdk::Format("%s: %s[%zu] has dims[%d] = %lld < 0",
                                              op, dir, i, d, (long long)t.dims[d]));
    }
  }
  if (sdk::DTypeSize(t.dtype) == 0) {
    return sdk::InvalidArgument(sdk::Format("%s: %s[%zu] has unknown dtype %d", op,
                                            dir, i, static_cast<int>(t.dtype)));
  }
  if (t.data != nullptr && !backend.allocator.Contains(t.data, sdk::SizeBytes(t))) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s[%zu] %s (%zu bytes at %p) is not inside memory allocated by "
        "this backend",
        op, dir, i, sdk::Describe(t).c_str(), sdk::SizeBytes(t), t.data));
  }
  return Status::Ok();
}

}  // namespace

bool IsSupportedOp(MNT_Op op) { return KernelFor(op) != nullptr; }

Status RunOp(CudaBackend& backend, const MNT_Backend_Run_Args& args) {
  const Kernel kernel = KernelFor(args.op);
  if (kernel == nullptr) {
    return sdk::Unimplemented(sdk::Format(
        "Backend_Run: op %d (%s) is not implemented by the cuda backend",
        static_cast<int>(args.op), sdk::OpName(args.op)));
  }
  const char* name = sdk::OpName(args.op);
  if ((args.num_inputs > 0 && args.inputs == nullptr) ||
      (args.num_outputs > 0 && args.outputs == nullptr)) {
    return sdk::InvalidArgument(
        sdk::Format("%s: inputs/outputs array is NULL but its count is not 0", name));
  }
  for (size_t i = 0; i < args.num_inputs; ++i) {
    MNT_RETURN_IF_ERROR(CheckTensor(backend, name, "in", i, args.inputs[i]));
  }
  for (size_t i = 0; i < args.num_outputs; ++i) {
    MNT_RETURN_IF_ERROR(CheckTensor(backend, name, "out", i, args.outputs[i]));
  }
  const OpCall call(name, args.inputs, args.num_inputs, args.outputs,
                    args.num_outputs, args.params);
  return kernel(backend, call);
}

}  // namespace mnt::cuda

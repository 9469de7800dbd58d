// One function per MNT_Op (semantics: plugins/abi/mnt_backend.h, reference:
// plugins/backends/cpu). Each checks its operands and params on the host,
// then enqueues kernels on the backend's stream.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_OPS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_OPS_H_

#include "plugins/backends/cuda/backend_state.h"
#include "plugins/backends/cuda/kernels.h"
#include "plugins/backends/cuda/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

// ops_elementwise.cc
sdk::Status RunFill(CudaBackend& b, const OpCall& call);
sdk::Status RunCast(CudaBackend& b, const OpCall& call);
sdk::Status RunAdd(CudaBackend& b, const OpCall& call);
sdk::Status RunActivationForward(CudaBackend& b, const OpCall& call);
sdk::Status RunActivationBackward(CudaBackend& b, const OpCall& call);
// gemm.cc
sdk::Status RunGemm(CudaBackend& b, const OpCall& call);
// ops_rows.cc
sdk::Status RunSoftmax(CudaBackend& b, const OpCall& call);
sdk::Status RunCrossEntropy(CudaBackend& b, const OpCall& call);
sdk::Status RunCountCorrect(CudaBackend& b, const OpCall& call);
sdk::Status RunLayerNormForward(CudaBackend& b, const OpCall& call);
sdk::Status RunLayerNormBackward(CudaBackend& b, const OpCall& call);
sdk::Status RunEmbeddingForward(CudaBackend& b, const OpCall& call);
sdk::Status RunEmbeddingBackward(CudaBackend& b, const OpCall& call);
sdk::Status RunBiasGrad(CudaBackend& b, const OpCall& call);
// ops_reduce.cc
sdk::Status RunReduce(CudaBackend& b, const OpCall& call);
sdk::Status RunGlobalNormSquared(CudaBackend& b, const OpCall& call);
sdk::Status RunNonfiniteCheckUnscale(CudaBackend& b, const OpCall& call);
sdk::Status RunSgdStep(CudaBackend& b, const OpCall& call);
sdk::Status RunAdamWStep(CudaBackend& b, const OpCall& call);
sdk::Status RunAmpUpdateScale(CudaBackend& b, const OpCall& call);   // ABI 1.4
sdk::Status RunClipCoefficient(CudaBackend& b, const OpCall& call);  // ABI 1.4
// ops_layers.cc
sdk::Status RunAttentionForward(CudaBackend& b, const OpCall& call);
sdk::Status RunAttentionBackward(CudaBackend& b, const OpCall& call);
sdk::Status RunPool2dForward(CudaBackend& b, const OpCall& call);
sdk::Status RunPool2dBackward(CudaBackend& b, const OpCall& call);
sdk::Status RunBatchNormForward(CudaBackend& b, const OpCall& call);
sdk::Status RunBatchNormBackward(CudaBackend& b, const OpCall& call);
// conv_cudnn.cc
sdk::Status RunConv2dForward(CudaBackend& b, const OpCall& call);
sdk::Status RunConv2dBackwardData(CudaBackend& b, const OpCall& call);
sdk::Status RunConv2dBackwardFilter(CudaBackend& b, const OpCall& call);

inline DevTensor Dev(const Operand& o) {
  return o.present() ? DevTensor{o->data, o->dtype} : DevTensor{};
}

// "<OP>: <kernel> launch" as the error context of a launcher's status.
inline sdk::Status Launched(const OpCall& call, cudaError_t err,
                            const char* kernel) {
  if (err == cudaSuccess) return sdk::Status::Ok();
  return sdk::Status(MNT_ERROR_INTERNAL,
                     sdk::Format("%s: %s launch: %s (%s)", call.op_name(), kernel,
                                 cudaGetErrorString(err), cudaGetErrorName(err)));
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_OPS_H_

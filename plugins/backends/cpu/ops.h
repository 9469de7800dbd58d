// One function per MNT_Op (semantics: plugins/abi/mnt_backend.h). Each checks
// its operands and params, then computes synchronously.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_OPS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_OPS_H_

#include "plugins/backends/cpu/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

// elementwise.cc
sdk::Status RunFill(const OpCall& call);
sdk::Status RunCast(const OpCall& call);
sdk::Status RunAdd(const OpCall& call);
sdk::Status RunActivationForward(const OpCall& call);
sdk::Status RunActivationBackward(const OpCall& call);
// gemm.cc
sdk::Status RunGemm(const OpCall& call);
// softmax_cross_entropy.cc
sdk::Status RunSoftmax(const OpCall& call);
sdk::Status RunCrossEntropy(const OpCall& call);
sdk::Status RunCountCorrect(const OpCall& call);
// layernorm.cc
sdk::Status RunLayerNormForward(const OpCall& call);
sdk::Status RunLayerNormBackward(const OpCall& call);
// embedding.cc
sdk::Status RunEmbeddingForward(const OpCall& call);
sdk::Status RunEmbeddingBackward(const OpCall& call);
// reduce.cc
sdk::Status RunBiasGrad(const OpCall& call);
sdk::Status RunReduce(const OpCall& call);
sdk::Status RunGlobalNormSquared(const OpCall& call);
sdk::Status RunNonfiniteCheckUnscale(const OpCall& call);
// optimizers.cc
sdk::Status RunSgdStep(const OpCall& call);
sdk::Status RunAdamWStep(const OpCall& call);
// attention.cc (ABI 1.2)
sdk::Status RunAttentionForward(const OpCall& call);
sdk::Status RunAttentionBackward(const OpCall& call);
// conv.cc, pool.cc, batchnorm.cc (ABI 1.3)
sdk::Status RunConv2dForward(const OpCall& call);
sdk::Status RunConv2dBackwardData(const OpCall& call);
sdk::Status RunConv2dBackwardFilter(const OpCall& call);
sdk::Status RunPool2dForward(const OpCall& call);
sdk::Status RunPool2dBackward(const OpCall& call);
sdk::Status RunBatchNormForward(const OpCall& call);
sdk::Status RunBatchNormBackward(const OpCall& call);
// loss_scaling.cc (ABI 1.4)
sdk::Status RunAmpUpdateScale(const OpCall& call);
sdk::Status RunClipCoefficient(const OpCall& call);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_OPS_H_

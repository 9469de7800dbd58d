// ATTENTION_FORWARD / BACKWARD through cuDNN's fused flash attention (SDPA),
// built as a cuDNN 9 backend operation graph: the same op sequence the cuDNN
// frontend lowers its SDPA node to, which cuDNN's fused attention engines
// recognise. Q, K, V are strided views into the packed qkv [B,T,3,H,D]
// buffer (dims B,H,T,D, strides T*3C, D, 3C, 1), O / dO are [B,T,H,D]; the
// stats output is the row logsumexp of the scaled scores in natural log,
// i.e. exactly the ABI's lse [B,H,T]. Execution plans are cached per
// (direction, B, H, T, D, dtype, causal); workspace comes from the backend's
// allocator.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_CUDNN_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_CUDNN_H_

#include "plugins/backends/common/calls/attention.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

using AttentionDims = backend::AttentionShape;

// Runs the op through cuDNN when the backend's `attention` option and the
// shape allow it; *ran says whether it did (false: run the fallback
// kernels). With attention=cudnn, a call cuDNN cannot take is an error
// instead. Only for operands of one 16-bit dtype (attention_route.h): fp32
// goes to the GEMM path, mixed dtypes to the fallback.
sdk::Status MaybeCudnnAttentionForward(CudaBackend& b, const OpCall& call,
                                       const AttentionDims& s, const Operand& qkv,
                                       const Operand& y, const Operand& lse, bool* ran);
sdk::Status MaybeCudnnAttentionBackward(CudaBackend& b, const OpCall& call,
                                        const AttentionDims& s, const Operand& dy,
                                        const Operand& qkv, const Operand& y,
                                        const Operand& lse, const Operand& dqkv, bool* ran);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_CUDNN_H_

// ATTENTION_FORWARD / BACKWARD in fp32 storage as cuBLASLt GEMMs
// (attention_gemm.cu): per sequence, a chunk of its heads as one
// strided-batched GEMM per product, over blocks of query rows, with the
// softmax (forward) and its derivative (backward) as small row kernels
// between the products. Why: the fallback kernels run fp32 attention on
// CUDA cores at two shared-memory loads per multiply-add, and cuDNN's SDPA
// takes 16-bit storage only; these products run at cuBLASLt's fp32 rate,
// or on TF32 tensor cores with attention_tf32=on. The plan (blocks, chunks,
// scratch, strides) is attention_gemm_plan.h, the row math attention_rows.h.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_GEMM_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_GEMM_H_

#include "plugins/backends/common/calls/attention.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

// Runs the op when cuBLASLt has an algorithm for each of its products; *ran
// says whether it did (false: run the fallback kernels, said once per shape
// on stderr). With attention=gemm a call it cannot run is an error instead.
// Only for operands that are all fp32 (attention_route.h).
sdk::Status MaybeGemmAttentionForward(CudaBackend& b, const backend::AttentionForwardCall& a,
                                      bool* ran);
sdk::Status MaybeGemmAttentionBackward(CudaBackend& b,
                                       const backend::AttentionBackwardCall& a, bool* ran);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_GEMM_H_

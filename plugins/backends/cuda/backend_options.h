// The cuda backend's creation options ("key=value,..." in
// MNT_Backend_Create_Args.options). Parsed apart from Backend_Create so the
// parsing is testable on machines without a device.
//   attention=auto|cudnn|gemm|fallback (default auto)
//     auto:     16-bit storage: cuDNN SDPA (flash attention) when the
//               device, the cuDNN version and the shape allow it and an
//               execution plan builds. fp32 storage: cuBLASLt GEMMs over
//               blocks of query rows with small softmax kernels between
//               them (attention_gemm.cu; cuDNN's SDPA has no fp32 path).
//               Anything else (operands of mixed dtypes, a call neither
//               can run): the fallback kernels, said once per shape on
//               stderr.
//     cudnn:    like auto, but a 16-bit call cuDNN cannot run is an error.
//     gemm:     like auto, but an fp32 call the GEMM path cannot run is an
//               error.
//     fallback: always the fallback kernels (deterministic, any dtypes).
//   attention_tf32=off|on (default off)
//     on: the GEMM path's products run on TF32 tensor cores
//     (CUBLAS_COMPUTE_32F_FAST_TF32: q, k, v, the probabilities and the
//     score gradients rounded to 10-bit mantissas, fp32 accumulation).
//     off: the call's compute mode decides (ABI 1.8 MNT_AttentionParams.
//     compute: TF32 from the tf32 precision, else plain fp32 products,
//     CUBLAS_COMPUTE_32F). on forces TF32 for every call, also from a
//     1.7 caller that cannot ask for it.
//   cuda_graphs=on|off (default on)
//     on: a step marked with Backend_StepBegin/StepEnd (ABI 1.7) is
//     deferred and recorded; the second of two equal steps is captured into
//     a CUDA graph and later equal steps replay it (one cudaGraphLaunch);
//     a step that differs, reads back or cannot be captured runs as issued
//     (common/step_session.h, step_graph.h; docs/performance.md).
//     off: every op is launched as it comes.
//   graph_workspace_mb=N (default 2048)
//     The most scratch memory a captured step may keep for the graph's life
//     (its kernels write it at every replay, so it is never lent out; it
//     counts as WORKSPACE). A step that would keep more runs eagerly, said
//     once on stderr. GPT-2 124M at B=16, T=1024 keeps about 0.6 GB.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_OPTIONS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_OPTIONS_H_

#include "plugins/sdk/status.h"

namespace mnt::cuda {

enum class AttentionImpl { kAuto, kCudnn, kGemm, kFallback };

const char* AttentionImplName(AttentionImpl impl);

struct CudaBackendOptions {
  AttentionImpl attention = AttentionImpl::kAuto;
  bool attention_tf32 = false;
  bool cuda_graphs = true;
  long long graph_workspace_mb = 2048;
};

// NULL or "" gives the defaults; an unknown key or value is one-line
// INVALID_ARGUMENT naming it and the accepted values.
sdk::Status ParseCudaBackendOptions(const char* text, CudaBackendOptions* out);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_OPTIONS_H_

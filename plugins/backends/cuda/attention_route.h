// Which implementation an attention call goes to, from the backend's
// `attention` option and the operands' storage dtypes (backend_options.h
// says what each option means). Host-only, so the CPU tests the choice in
// CI (attention_route_test.cc); attention.cu acts on it.
//   one 16-bit dtype -> cuDNN SDPA (attention_cudnn.cc), which may still
//                       refuse a shape;
//   all fp32         -> cuBLASLt GEMMs (attention_gemm.cu), which may still
//                       find no cuBLASLt algorithm;
//   mixed dtypes     -> the fallback kernels: cuDNN and the GEMMs both read
//                       and write one storage type;
//   attention=fallback -> the fallback kernels, whatever the dtypes.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_ROUTE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_ROUTE_H_

#include <cstdint>
#include <initializer_list>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/cuda/backend_options.h"

namespace mnt::cuda {

enum class AttentionPath { kCudnn, kGemm, kFallback };

// Why the fallback kernels run where the option asked for a faster path;
// announced once per shape and reason on stderr (attention_notice.h).
enum class FallbackReason : int32_t {
  kNone = 0,            // chosen (attention=fallback) or not falling back
  kMixedDtypes = 1,
  kCudnnForwardPlan = 2,   // cuDNN SDPA cannot run this forward
  kCudnnBackwardPlan = 3,  // ... or this backward
  kGemmForward = 4,        // cuBLASLt has no algorithm for a forward product
  kGemmBackward = 5,       // ... or a backward product
};

struct AttentionRoute {
  AttentionPath path;
  FallbackReason reason;  // kNone unless path is kFallback against the option
};

inline AttentionRoute RouteAttention(AttentionImpl impl, std::initializer_list<MNT_DType> io) {
  if (impl == AttentionImpl::kFallback) return {AttentionPath::kFallback, FallbackReason::kNone};
  const MNT_DType first = *io.begin();
  for (MNT_DType t : io) {
    if (t != first) return {AttentionPath::kFallback, FallbackReason::kMixedDtypes};
  }
  if (first == MNT_DTYPE_F32) return {AttentionPath::kGemm, FallbackReason::kNone};
  if (first == MNT_DTYPE_BF16 || first == MNT_DTYPE_F16) {
    return {AttentionPath::kCudnn, FallbackReason::kNone};
  }
  return {AttentionPath::kFallback, FallbackReason::kNone};  // no float dtype passes the checks
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_ROUTE_H_

// The slow-path line that says the fallback attention kernels run, and why,
// where the `attention` option asked for a faster path (cuDNN SDPA or the
// GEMM path): said once per shape, dtype and reason (so at the first step)
// and every call counted (slow_paths.h), because the fallback is much
// slower and a run should not be slow silently. Shared by attention.cu,
// attention_gemm.cu and attention_cudnn.cc.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_NOTICE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_NOTICE_H_

#include <string>

#include "plugins/backends/common/calls/attention.h"
#include "plugins/backends/cuda/attention_route.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

inline const char* FallbackReasonName(FallbackReason reason) {
  switch (reason) {
    case FallbackReason::kMixedDtypes: return "mixed dtypes";
    case FallbackReason::kCudnnForwardPlan: return "cuDNN forward plan";
    case FallbackReason::kCudnnBackwardPlan: return "cuDNN backward plan";
    case FallbackReason::kGemmForward: return "GEMM forward";
    case FallbackReason::kGemmBackward: return "GEMM backward";
    default: return "chosen";
  }
}

// `why` and the shape's text are only made the first time.
template <typename Why>
void SayAttentionFallback(CudaBackend& b, const backend::AttentionShape& s,
                          FallbackReason reason, MNT_DType dtype, Why&& why) {
  const auto shape = [&] {
    return sdk::Format("B=%lld H=%lld T=%lld D=%lld%s %s, %s", (long long)s.b, (long long)s.h,
                       (long long)s.t, (long long)s.d, s.causal ? " causal" : "",
                       sdk::DTypeName(dtype), FallbackReasonName(reason));
  };
  const uint64_t key = ShapeKey({s.b, s.h, s.t, s.d, s.causal ? 1 : 0, dtype,
                                 static_cast<int64_t>(reason)});
  b.slow_paths.Note("attention fallback", key, shape, [&] {
    const std::string text = why();
    return sdk::Format("attention=%s runs the fallback attention kernels: %s",
                       AttentionImplName(b.options.attention), text.c_str());
  });
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_NOTICE_H_

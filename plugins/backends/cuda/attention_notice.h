// The one stderr line that says the fallback attention kernels run, and
// why, where the `attention` option asked for a faster path (cuDNN SDPA or
// the GEMM path): once per shape, dtype and reason (so at the first step),
// because the fallback is much slower and a run should not be slow
// silently. Shared by attention.cu, attention_gemm.cu and
// attention_cudnn.cc.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_NOTICE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_NOTICE_H_

#include <cstdio>
#include <string>

#include "plugins/backends/common/calls/attention.h"
#include "plugins/backends/cuda/attention_route.h"
#include "plugins/backends/cuda/backend.h"

namespace mnt::cuda {

// `why` is only called (and only formats) the first time.
template <typename Why>
void SayAttentionFallback(CudaBackend& b, const backend::AttentionShape& s,
                          FallbackReason reason, MNT_DType dtype, Why&& why) {
  AttentionPlanKey key;
  key.what = static_cast<int32_t>(reason);
  key.dtype = static_cast<int32_t>(dtype);
  key.causal = s.causal ? 1 : 0;
  key.b = s.b, key.h = s.h, key.t = s.t, key.d = s.d;
  if (!b.attention_fallbacks_said.insert(key).second) return;
  const std::string text = why();
  std::fprintf(stderr,
               "mantissa: cuda backend: attention=%s uses the fallback attention kernels "
               "for B=%lld H=%lld T=%lld D=%lld%s: %s\n",
               AttentionImplName(b.options.attention), (long long)s.b, (long long)s.h,
               (long long)s.t, (long long)s.d, s.causal ? " (causal)" : "", text.c_str());
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_NOTICE_H_

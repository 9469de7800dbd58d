// What the cuDNN attention path caches per call configuration: a fused-SDPA
// plan (or why none builds) per direction, shape, dtype and mask, and the
// fallbacks already announced on stderr. A plain struct compared and hashed
// field by field, so looking one up on every attention call formats no
// string and allocates nothing. Host-only and free of cuDNN, so the CPU
// tests it in CI (conv_plan_key_test.cc, beside the convolution's key).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_PLAN_KEY_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_PLAN_KEY_H_

#include <cstddef>
#include <cstdint>

namespace mnt::cuda {

struct AttentionPlanKey {
  // Plans: the direction (0 forward, 1 backward). Announced fallbacks: the
  // reason (attention_cudnn.cc's FallbackReason) and, for a refused plan,
  // the direction too.
  int32_t what = 0;
  int32_t dtype = 0;  // MNT_DType of the call's storage
  int32_t causal = 0;
  int64_t b = 0, h = 0, t = 0, d = 0;

  friend bool operator==(const AttentionPlanKey& x, const AttentionPlanKey& y) {
    return x.what == y.what && x.dtype == y.dtype && x.causal == y.causal && x.b == y.b &&
           x.h == y.h && x.t == y.t && x.d == y.d;
  }
  friend bool operator!=(const AttentionPlanKey& x, const AttentionPlanKey& y) {
    return !(x == y);
  }
};

// FNV-1a over every field's value.
struct AttentionPlanKeyHash {
  size_t operator()(const AttentionPlanKey& key) const {
    uint64_t h = 14695981039346656037ull;
    const int64_t fields[] = {key.what, key.dtype, key.causal, key.b, key.h, key.t, key.d};
    for (int64_t f : fields) {
      for (int byte = 0; byte < 8; ++byte) {
        h ^= (static_cast<uint64_t>(f) >> (8 * byte)) & 0xffu;
        h *= 1099511628211ull;
      }
    }
    return static_cast<size_t>(h);
  }
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_PLAN_KEY_H_

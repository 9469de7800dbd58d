// What a cached convolution plan (conv_cudnn.cc: cuDNN's tensor, filter and
// convolution descriptors and the heuristic's algorithm) is keyed on. A
// plain struct compared field by field and hashed over its values: finding
// a plan formats no string and allocates nothing, so a convolution that hits
// the cache creates no descriptor either. Host-only and free of cuDNN, so
// the CPU tests it in CI (conv_plan_key_test.cc).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_PLAN_KEY_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_PLAN_KEY_H_

#include <cstddef>
#include <cstdint>

namespace mnt::cuda {

struct ConvPlanKey {
  int32_t kind = 0;  // forward, backward data, backward filter
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // filters
  int64_t groups = 0;
  int64_t pad_h = 0, pad_w = 0, stride_h = 0, stride_w = 0, dil_h = 0, dil_w = 0;
  int32_t io_dtype = 0;  // MNT_DType cuDNN's tensors are in
  int32_t compute = 0;   // MNT_ComputeMode

  friend bool operator==(const ConvPlanKey& x, const ConvPlanKey& y) {
    return x.kind == y.kind && x.n == y.n && x.c == y.c && x.h == y.h && x.w == y.w &&
           x.k == y.k && x.r == y.r && x.s == y.s && x.groups == y.groups &&
           x.pad_h == y.pad_h && x.pad_w == y.pad_w && x.stride_h == y.stride_h &&
           x.stride_w == y.stride_w && x.dil_h == y.dil_h && x.dil_w == y.dil_w &&
           x.io_dtype == y.io_dtype && x.compute == y.compute;
  }
  friend bool operator!=(const ConvPlanKey& x, const ConvPlanKey& y) { return !(x == y); }
};

// FNV-1a over every field's value (never over the struct's bytes, whose
// padding is indeterminate).
struct ConvPlanKeyHash {
  size_t operator()(const ConvPlanKey& key) const {
    uint64_t h = 14695981039346656037ull;
    auto mix = [&h](uint64_t v) {
      for (int byte = 0; byte < 8; ++byte) {
        h ^= (v >> (8 * byte)) & 0xffu;
        h *= 1099511628211ull;
      }
    };
    const int64_t fields[] = {key.kind,   key.n,        key.c,        key.h,     key.w,
                              key.k,      key.r,        key.s,        key.groups, key.pad_h,
                              key.pad_w,  key.stride_h, key.stride_w, key.dil_h, key.dil_w,
                              key.io_dtype, key.compute};
    for (int64_t f : fields) mix(static_cast<uint64_t>(f));
    return static_cast<size_t>(h);
  }
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_PLAN_KEY_H_

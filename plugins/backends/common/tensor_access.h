// Per-element access to float tensors of any storage dtype, and small pieces
// of row math (softmax probabilities, layer-norm gradient) shared by the CPU
// tests and the CUDA kernels. Loads widen to fp32; stores round to nearest
// even with the bit-exact conversions of float_convert.h, so a CUDA kernel
// writes exactly the bits the CPU backend writes for the same fp32 value.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_TENSOR_ACCESS_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_TENSOR_ACCESS_H_

#include <math.h>

#include <cstdint>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

// Element i of a F32/F16/BF16 buffer as fp32 (0 for other dtypes: callers
// check dtypes before launching).
MNT_HOST_DEVICE inline float LoadAsFloat(const void* data, MNT_DType dtype,
                                         int64_t i) {
  switch (dtype) {
    case MNT_DTYPE_F32: return static_cast<const float*>(data)[i];
    case MNT_DTYPE_F16:
      return HalfBitsToFloat(static_cast<const uint16_t*>(data)[i]);
    case MNT_DTYPE_BF16:
      return Bf16BitsToFloat(static_cast<const uint16_t*>(data)[i]);
    default: return 0.0f;
  }
}

// Writes `value` rounded to nearest even into element i.
MNT_HOST_DEVICE inline void StoreFromFloat(void* data, MNT_DType dtype,
                                           int64_t i, float value) {
  switch (dtype) {
    case MNT_DTYPE_F32: static_cast<float*>(data)[i] = value; break;
    case MNT_DTYPE_F16:
      static_cast<uint16_t*>(data)[i] = FloatToHalfBits(value);
      break;
    case MNT_DTYPE_BF16:
      static_cast<uint16_t*>(data)[i] = FloatToBf16Bits(value);
      break;
    default: break;
  }
}

// One element of the fused softmax + cross-entropy gradient:
// (softmax_j - onehot_j) * grad_scale, with softmax_j = exp(x - max) * inv_sum
// (inv_sum = 1 / sum exp(x - max), computed once per row).
MNT_HOST_DEVICE inline float CrossEntropyGradient(float x, float row_max,
                                                  float inv_sum, bool is_target,
                                                  float grad_scale) {
  const float p = expf(x - row_max) * inv_sum;
  return (p - (is_target ? 1.0f : 0.0f)) * grad_scale;
}

// One element of the layer-norm input gradient given the row means
// a = mean(dxhat) and b = mean(dxhat * xhat):
// dx = rstd * (dxhat - a - xhat * b).
MNT_HOST_DEVICE inline float LayerNormInputGradient(float dxhat, float xhat,
                                                    float a, float b,
                                                    float rstd) {
  return rstd * (dxhat - a - xhat * b);
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_TENSOR_ACCESS_H_

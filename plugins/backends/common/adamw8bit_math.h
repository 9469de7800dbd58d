// One quantization block of ADAMW8BIT_STEP (ABI 1.12), shared by the CPU
// backend and the CUDA kernels: dequantize each element's first moment
// (signed dynamic map) and second moment (unsigned map) with the block's
// absmax, run AdamW's fp32 update on them (AdamWUpdate, the same formula
// and bits as ADAMW_STEP's), update the parameter with the new fp32 moments,
// and requantize the new moments with the block's new absmax
// (blockwise_quantization.h). This is bitsandbytes' blockwise 8-bit Adam
// (its kOptimizerStatic8bit2StateBlockwise) with one difference: the first
// moment is torch's lerp m + (1 - beta1)(g - m), as Mantissa's AdamW, not
// bitsandbytes' beta1 m + (1 - beta1) g, so that a block whose moments are
// exact in the maps steps as ADAMW_STEP does.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_ADAMW8BIT_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_ADAMW8BIT_MATH_H_

#include <cstdint>

#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

// The two maps a step reads (signed for m, unsigned for v).
struct AdamW8bitMaps {
  float m[kQuantizationCodes];
  float v[kQuantizationCodes];
};

MNT_HOST_DEVICE inline void BuildAdamW8bitMaps(AdamW8bitMaps* maps) {
  BuildDynamicMap(true, maps->m);
  BuildDynamicMap(false, maps->v);
}

// Element i of a block: dequantized moments through AdamWUpdate; `m`, `v`
// receive the new fp32 moments (to requantize once the block's absmax is
// known), *param the new weight.
MNT_HOST_DEVICE inline void AdamW8bitElement(const AdamWCoefficients& c, const AdamW8bitMaps& maps,
                                             float grad, uint8_t m_code, float m_absmax,
                                             uint8_t v_code, float v_absmax, float* param,
                                             float* m, float* v) {
  *m = Dequantize(maps.m, m_code, m_absmax);
  *v = Dequantize(maps.v, v_code, v_absmax);
  AdamWUpdate(c, grad, param, m, v);
}

// One block of `count` (1..kQuantizationBlock) elements, in place: grad
// (already times the step's multiplier), param, the codes and the block's
// absmax of both moments. The order within the block changes no bit: each
// element's update is independent and the absmax is an exact max.
MNT_HOST_DEVICE inline void AdamW8bitBlock(const AdamWCoefficients& c, const AdamW8bitMaps& maps,
                                           const float* grad, float* param, uint8_t* m_codes,
                                           float* m_absmax, uint8_t* v_codes, float* v_absmax,
                                           int count) {
  float m[kQuantizationBlock], v[kQuantizationBlock];
  float m_max = 0.0f, v_max = 0.0f;
  for (int i = 0; i < count; ++i) {
    AdamW8bitElement(c, maps, grad[i], m_codes[i], *m_absmax, v_codes[i], *v_absmax, &param[i],
                     &m[i], &v[i]);
    m_max = AbsMaxCombine(m_max, m[i]);
    v_max = AbsMaxCombine(v_max, v[i]);
  }
  for (int i = 0; i < count; ++i) {
    m_codes[i] = Requantize(maps.m, m[i], m_max, true);
    v_codes[i] = Requantize(maps.v, v[i], v_max, false);
  }
  *m_absmax = m_max;
  *v_absmax = v_max;
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_ADAMW8BIT_MATH_H_

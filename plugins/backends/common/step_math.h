// Scalar math of one optimizer step, shared by the CPU backend and the CUDA
// kernels (ABI 1.4): the dynamic loss-scale update (torch's
// _amp_update_scale_), the clip_grad_norm_ multiplier and AdamW's bias
// corrections. Products and quotients are taken in double and rounded to fp32
// once, with explicit round-to-nearest multiplies on the device so nvcc
// cannot fuse them into FMAs: host and device give the same bits.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_MATH_H_

#include <cmath>
#include <cstdint>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

// a * b rounded once (never contracted into an FMA with a later add).
MNT_HOST_DEVICE inline double MulRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Doubles at or above this round to +inf as float (FLT_MAX plus half an ulp;
// the tie goes to the even neighbour 2^128). Same threshold as the precision
// plugins' host LossScaler.
constexpr double kFloatOverflowThreshold = 0x1.ffffffp+127;

// (float)(scale * factor) in double, or `scale` unchanged when the product
// would not be a finite float: the scale never becomes inf.
MNT_HOST_DEVICE inline float ScaleByFactor(float scale, double factor) {
  const double v = MulRn(static_cast<double>(scale), factor);
  if (!(v < kFloatOverflowThreshold && v > -kFloatOverflowThreshold)) {
    return scale;  // also catches NaN
  }
  return static_cast<float>(v);
}

// One GradScaler.update(): on found_inf back off and reset the tracker;
// otherwise count a clean step and grow after growth_interval of them.
MNT_HOST_DEVICE inline void AmpUpdateScale(bool found_inf, float growth_factor,
                                           float backoff_factor,
                                           int32_t growth_interval,
                                           float* scale,
                                           int32_t* growth_tracker) {
  if (found_inf) {
    *scale = ScaleByFactor(*scale, static_cast<double>(backoff_factor));
    *growth_tracker = 0;
    return;
  }
  const int32_t successful = *growth_tracker + 1;
  if (successful >= growth_interval) {
    *scale = ScaleByFactor(*scale, static_cast<double>(growth_factor));
    *growth_tracker = 0;
  } else {
    *growth_tracker = successful;
  }
}

// 1/scale in double, then fp32, as GradScaler's unscale does (inf for 0).
MNT_HOST_DEVICE inline float InvScale(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

// torch.nn.utils.clip_grad_norm_'s multiplier from the squared global norm:
// max_norm / (norm + 1e-6) when norm > max_norm, else 1. 1 without clipping
// (max_norm <= 0) and on overflow steps (skipped anyway). A NaN norm compares
// false and gives 1.
MNT_HOST_DEVICE inline float ClipCoefficient(float norm_squared, float max_norm,
                                             bool found_inf) {
  if (found_inf || !(max_norm > 0.0f)) return 1.0f;
  const double norm = sqrt(static_cast<double>(norm_squared));
  if (!(norm > static_cast<double>(max_norm))) return 1.0f;
  return static_cast<float>(static_cast<double>(max_norm) / (norm + 1e-6));
}

// beta^step for step >= 0 by repeated squaring, every product rounded once:
// the same bits on the host and on the device (pow() is not correctly
// rounded on either, and differently so).
MNT_HOST_DEVICE inline double PowInt(double base, int64_t step) {
  double result = 1.0;
  while (step > 0) {
    if (step & 1) result = MulRn(result, base);
    base = MulRn(base, base);
    step >>= 1;
  }
  return result;
}

// torch.optim.AdamW's per-step constants for a 1-based step.
MNT_HOST_DEVICE inline AdamWCoefficients AdamWCoefficientsForStep(
    float lr, float beta1, float beta2, float epsilon, float weight_decay,
    int64_t step) {
  const double bias_correction1 = 1.0 - PowInt(static_cast<double>(beta1), step);
  const double bias_correction2 = 1.0 - PowInt(static_cast<double>(beta2), step);
  AdamWCoefficients c;
  c.lr = lr;
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.epsilon = epsilon;
  c.weight_decay = weight_decay;
  c.step_size = static_cast<float>(static_cast<double>(lr) / bias_correction1);
  c.bias_correction2_sqrt = static_cast<float>(sqrt(bias_correction2));
  return c;
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_MATH_H_

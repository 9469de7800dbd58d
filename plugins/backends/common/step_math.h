// Scalar math of one optimizer step, shared by the CPU backend and the CUDA
// kernels (ABI 1.4): the clip_grad_norm_ multiplier and AdamW's bias
// corrections. The loss-scale update (AMP_UPDATE_SCALE) and InvScale live in
// the neutral plugins/sdk/loss_scale_math.h, shared with the precision
// plugins and the trainer. Products and quotients are taken in double and rounded to fp32
// once, with explicit round-to-nearest multiplies on the device so nvcc
// cannot fuse them into FMAs: host and device give the same bits.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_STEP_MATH_H_

#include <cmath>
#include <cstdint>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/host_device.h"
#include "plugins/sdk/loss_scale_math.h"

namespace mnt {

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

// A multi-tensor step's per-tensor learning rate (ABI 1.6): lr * lr_scale
// rounded once, lr itself for a scale of 1. The contract check forms it from
// params->lr on the host; with a device lr (1.7) the kernels form it from
// that, with the same bits.
MNT_HOST_DEVICE inline float TableLr(float lr, float lr_scale) {
  if (lr_scale == 1.0f) return lr;
#ifdef __CUDA_ARCH__
  return __fmul_rn(lr, lr_scale);
#else
  return lr * lr_scale;
#endif
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

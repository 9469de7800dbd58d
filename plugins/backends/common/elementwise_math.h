// Per-element formulas shared by the CPU backend and the CUDA kernels:
// activations, the optimizer updates and the loss-scaling unscale step.
// Everything computes in fp32, as the ABI specifies for kernels.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_ELEMENTWISE_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_ELEMENTWISE_MATH_H_

#include <cmath>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/rounded_arith.h"

namespace mnt {

// ---- Activations -----------------------------------------------------------

MNT_HOST_DEVICE inline float Relu(float x) { return x > 0.0f ? x : 0.0f; }

// d relu / dx taken as 0 at x == 0 (as torch does).
MNT_HOST_DEVICE inline float ReluBackward(float x, float dy) {
  return x > 0.0f ? dy : 0.0f;
}

// sqrt(2/pi) and the cubic coefficient of GPT-2's tanh approximation.
constexpr float kGeluTanhScale = 0.7978845608028654f;
constexpr float kGeluTanhCubic = 0.044715f;

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
MNT_HOST_DEVICE inline float GeluTanh(float x) {
  const float inner = kGeluTanhScale * (x + kGeluTanhCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

// dy * d/dx GeluTanh(x).
MNT_HOST_DEVICE inline float GeluTanhBackward(float x, float dy) {
  const float x2 = x * x;
  const float inner = kGeluTanhScale * (x + kGeluTanhCubic * x2 * x);
  const float t = tanhf(inner);
  const float dinner = kGeluTanhScale * (1.0f + 3.0f * kGeluTanhCubic * x2);
  return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
}

// ---- Loss scaling ----------------------------------------------------------

// Bit test, so it stays correct under -ffast-math / --use_fast_math.
MNT_HOST_DEVICE inline bool IsFiniteF32(float x) {
  return (FloatToBits(x) & 0x7f800000u) != 0x7f800000u;
}

// One element of torch's _amp_foreach_non_finite_check_and_unscale_: sets
// *found_inf when `scaled` is inf/NaN and returns the unscaled value.
MNT_HOST_DEVICE inline float UnscaleAndCheck(float scaled, float inv_scale,
                                             bool* found_inf) {
  if (!IsFiniteF32(scaled)) *found_inf = true;
  return scaled * inv_scale;
}

// ---- Optimizers (fp32 master weights) --------------------------------------

// Per-step constants of torch.optim.SGD (dampening 0).
struct SgdCoefficients {
  float lr;
  float momentum;
  float weight_decay;
  bool nesterov;
};

// One torch.optim.SGD element update. `grad` already carries the grad
// multiplier. torch initialises the momentum buffer to the gradient on the
// first step; the ABI carries no "first step" flag, so callers zero the
// buffer instead: buf = momentum * 0 + g = g gives the same first step.
MNT_HOST_DEVICE inline void SgdUpdate(const SgdCoefficients& c, float grad,
                                      float* param, float* momentum_buffer) {
  // Every product and sum rounded once (rounded_arith.h): the CPU's bits.
  float g = grad;
  if (c.weight_decay != 0.0f) g = AddF32(g, MulF32(c.weight_decay, *param));  // coupled L2
  if (c.momentum != 0.0f) {
    const float buf = AddF32(MulF32(c.momentum, *momentum_buffer), g);
    *momentum_buffer = buf;
    g = c.nesterov ? AddF32(g, MulF32(c.momentum, buf)) : buf;
  }
  *param = SubF32(*param, MulF32(c.lr, g));
}

// Per-step constants of torch.optim.AdamW; the bias corrections depend on the
// step only, so the host computes them once (in double) per launch.
struct AdamWCoefficients {
  float lr;
  float beta1;
  float beta2;
  float epsilon;
  float weight_decay;
  float step_size;              // lr / (1 - beta1^step)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^step)
};

// One torch.optim.AdamW element update (single-tensor path, amsgrad off).
MNT_HOST_DEVICE inline void AdamWUpdate(const AdamWCoefficients& c, float grad,
                                        float* param, float* m, float* v) {
  // Every product and sum rounded once (rounded_arith.h): the CPU's bits.
  float p = *param;
  p = MulF32(p, SubF32(1.0f, MulF32(c.lr, c.weight_decay)));  // decoupled decay
  const float m_new =
      AddF32(*m, MulF32(SubF32(1.0f, c.beta1), SubF32(grad, *m)));  // lerp, as torch
  const float v_new =
      AddF32(MulF32(c.beta2, *v), MulF32(MulF32(SubF32(1.0f, c.beta2), grad), grad));
  const float denom = AddF32(DivF32(SqrtF32(v_new), c.bias_correction2_sqrt), c.epsilon);
  p = SubF32(p, MulF32(c.step_size, DivF32(m_new, denom)));
  *param = p;
  *m = m_new;
  *v = v_new;
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_ELEMENTWISE_MATH_H_

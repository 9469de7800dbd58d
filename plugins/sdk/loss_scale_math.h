// Mantissa plugin SDK: the dynamic loss-scale recipe (ABI 1.5), written once.
//
// One update formula and its defaults, used by the built-in precision
// plugins' host scaler, by both backends' AMP_UPDATE_SCALE (the CUDA kernel
// compiles this header for the device) and by the trainer and
// plugin_conformance to replay a declared recipe. A third-party precision
// plugin may use it too: then its LossScaler_Update gives the device path's
// bits by construction.
//
// The recipe is PyTorch GradScaler's update (torch._amp_update_scale_) plus
// what DeepSpeed and Apex add:
//   * hysteresis (DeepSpeed's fp16 `hysteresis`, with consecutive_hysteresis
//     on): an overflow backs the scale off only when it is the hysteresis-th
//     overflow in a row; the first hysteresis - 1 overflows of a run of them
//     are skipped without a backoff. A clean step forgets the run. Every
//     overflow step is skipped, whether it backs off or not;
//   * min_scale (DeepSpeed's `min_loss_scale`): a backoff never goes below it;
//   * max_scale (Apex's `max_loss_scale`): a growth never goes above it.
// With hysteresis 1, min_scale 0 and no max_scale it is GradScaler exactly.
//
// Products are taken in double and rounded to fp32 once, with an explicit
// round-to-nearest multiply on the device so nvcc cannot contract it into an
// FMA: the host and every device give the same bits.
#ifndef MANTISSA_PLUGINS_SDK_LOSS_SCALE_MATH_H_
#define MANTISSA_PLUGINS_SDK_LOSS_SCALE_MATH_H_

#include <cstdint>

#ifndef MNT_HOST_DEVICE
#ifdef __CUDACC__
#define MNT_HOST_DEVICE __host__ __device__
#else
#define MNT_HOST_DEVICE
#endif
#endif

namespace mnt {

// The recipe's parameters and their defaults (GradScaler's). A recipe whose
// factors are not exact in fp32 has no device form (AMP_UPDATE_SCALE takes
// fp32 factors); the formula below takes them as doubles, as torch does.
struct LossScaleRecipeParams {
  static constexpr float kDefaultInitScale = 65536.0f;  // 2^16
  double growth_factor = 2.0;     // > 1
  double backoff_factor = 0.5;    // in (0, 1)
  int64_t growth_interval = 2000; // >= 1 clean steps before a growth
  int32_t hysteresis = 1;         // >= 1 overflows in a row before a backoff
  float min_scale = 0.0f;         // >= 0; backoffs stop here (0: no floor)
  float max_scale = 0.0f;         // 0: no ceiling, else >= min_scale
};

// a * b rounded once (never contracted into an FMA with a later add).
MNT_HOST_DEVICE inline double MulRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Doubles at or above this round to +inf as float (FLT_MAX plus half an ulp;
// the tie goes to the even neighbour 2^128).
constexpr double kFloatOverflowThreshold = 0x1.ffffffp+127;

// (float)(scale * factor) in double, or `scale` unchanged when the product
// would not be a finite float: the scale never becomes inf. A backoff may
// underflow to 0 after ~150 backoffs in a row without a floor, as in torch.
MNT_HOST_DEVICE inline float ScaleByFactor(float scale, double factor) {
  const double v = MulRn(static_cast<double>(scale), factor);
  if (!(v < kFloatOverflowThreshold && v > -kFloatOverflowThreshold)) {
    return scale;  // also catches NaN
  }
  return static_cast<float>(v);
}

// One step of the recipe after the non-finite check. `Int` is int64_t in the
// host scaler and int32_t on the device. Every overflow step is skipped
// (the caller's business); this only moves the scale and the two trackers:
//   growth_tracker:     clean steps since the last growth or overflow;
//   hysteresis_tracker: overflows in a row that did not back off, in
//                       [0, hysteresis - 1].
template <typename Int>
MNT_HOST_DEVICE inline void UpdateLossScale(bool found_inf, double growth_factor,
                                            double backoff_factor,
                                            int64_t growth_interval,
                                            int32_t hysteresis, float min_scale,
                                            float max_scale, float* scale,
                                            Int* growth_tracker,
                                            Int* hysteresis_tracker) {
  if (found_inf) {
    *growth_tracker = 0;
    if (*hysteresis_tracker + 1 < hysteresis) {  // absorbed: no backoff yet
      *hysteresis_tracker = *hysteresis_tracker + 1;
      return;
    }
    const float backed_off = ScaleByFactor(*scale, backoff_factor);
    *scale = backed_off < min_scale ? min_scale : backed_off;
    return;
  }
  *hysteresis_tracker = 0;
  const int64_t successful = static_cast<int64_t>(*growth_tracker) + 1;
  if (successful >= growth_interval) {
    const float grown = ScaleByFactor(*scale, growth_factor);
    *scale = (max_scale > 0.0f && grown > max_scale) ? max_scale : grown;
    *growth_tracker = 0;
  } else {
    *growth_tracker = static_cast<Int>(successful);
  }
}

template <typename Int>
MNT_HOST_DEVICE inline void UpdateLossScale(bool found_inf,
                                            const LossScaleRecipeParams& p,
                                            float* scale, Int* growth_tracker,
                                            Int* hysteresis_tracker) {
  UpdateLossScale(found_inf, p.growth_factor, p.backoff_factor, p.growth_interval,
                  p.hysteresis, p.min_scale, p.max_scale, scale, growth_tracker,
                  hysteresis_tracker);
}

// 1/scale in double, then fp32, as GradScaler's unscale does (inf for 0).
MNT_HOST_DEVICE inline float InvScale(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

// Whether `v` is exactly representable in fp32 (the recipe's factors must be
// for the device path, whose op takes fp32 factors).
inline bool ExactInFloat(double v) {
  return static_cast<double>(static_cast<float>(v)) == v;
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_SDK_LOSS_SCALE_MATH_H_

// AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.4; the whole dynamic recipe
// since 1.5): single scalars, one thread each, with the formulas of
// plugins/sdk/loss_scale_math.h and step_math.h (the CPU backend's and the
// precision plugins' bits), so the loss scale and the clipping factor never
// leave the device. Launched through Launch() (launch.h), so each reports
// its own launch status, never an error an earlier call left behind.
#include <cuda_runtime.h>

#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cuda/backend.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// hysteresis_tracker NULL: hysteresis is 1, which never reads or moves it.
__global__ void AmpUpdateScaleKernel(const float* found_inf, float* scale,
                                     int32_t* tracker, int32_t* hysteresis_tracker,
                                     float* inv_scale, float growth_factor,
                                     float backoff_factor, int32_t growth_interval,
                                     int32_t hysteresis, float min_scale,
                                     float max_scale) {
  int32_t no_hysteresis = 0;
  UpdateLossScale(*found_inf != 0.0f, static_cast<double>(growth_factor),
                  static_cast<double>(backoff_factor), growth_interval, hysteresis,
                  min_scale, max_scale, scale, tracker,
                  hysteresis_tracker != nullptr ? hysteresis_tracker : &no_hysteresis);
  *inv_scale = InvScale(*scale);
}

__global__ void ClipCoefficientKernel(const float* norm_squared, const float* found_inf,
                                      float max_norm, float* multiplier) {
  const bool skip = found_inf != nullptr && *found_inf != 0.0f;
  *multiplier = ClipCoefficient(*norm_squared, max_norm, skip);
}

}  // namespace

Status CudaBackend::AmpUpdateScale(const backend::AmpUpdateScaleCall& a) {
  int32_t* hysteresis_tracker =
      a.hysteresis_tracker.present() ? a.hysteresis_tracker.i32() : nullptr;
  return Launched(a,
                  Launch(AmpUpdateScaleKernel, 1, 1, 0, stream,
                         static_cast<const float*>(a.found_inf.f32()), a.scale.f32(),
                         a.growth_tracker.i32(), hysteresis_tracker, a.inv_scale.f32(),
                         a.growth_factor, a.backoff_factor, a.growth_interval, a.hysteresis,
                         a.min_scale, a.max_scale),
                  "amp_update_scale");
}

Status CudaBackend::ClipCoefficient(const backend::ClipCoefficientCall& c) {
  return Launched(c,
                  Launch(ClipCoefficientKernel, 1, 1, 0, stream,
                         static_cast<const float*>(c.norm_squared.f32()),
                         static_cast<const float*>(c.found_inf.f32()), c.max_norm,
                         c.multiplier.f32()),
                  "clip_coefficient");
}

}  // namespace mnt::cuda

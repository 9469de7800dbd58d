// AMP_UPDATE_SCALE and CLIP_COEFFICIENT (ABI 1.4): single scalars, one
// thread each, with step_math.h's formulas (the CPU backend's bits), so the
// loss scale and the clipping factor never leave the device.
#include <cuda_runtime.h>

#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cuda/backend.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

__global__ void AmpUpdateScaleKernel(const float* found_inf, float* scale,
                                     int32_t* tracker, float* inv_scale,
                                     float growth_factor, float backoff_factor,
                                     int32_t growth_interval) {
  AmpUpdateScale(*found_inf != 0.0f, growth_factor, backoff_factor, growth_interval,
                 scale, tracker);
  *inv_scale = InvScale(*scale);
}

__global__ void ClipCoefficientKernel(const float* norm_squared, const float* found_inf,
                                      float max_norm, float* multiplier) {
  const bool skip = found_inf != nullptr && *found_inf != 0.0f;
  *multiplier = ClipCoefficient(*norm_squared, max_norm, skip);
}

}  // namespace

Status CudaBackend::AmpUpdateScale(const backend::AmpUpdateScaleCall& a) {
  AmpUpdateScaleKernel<<<1, 1, 0, stream>>>(a.found_inf.f32(), a.scale.f32(),
                                            a.growth_tracker.i32(), a.inv_scale.f32(),
                                            a.growth_factor, a.backoff_factor,
                                            a.growth_interval);
  return Launched(a, "amp_update_scale");
}

Status CudaBackend::ClipCoefficient(const backend::ClipCoefficientCall& c) {
  ClipCoefficientKernel<<<1, 1, 0, stream>>>(c.norm_squared.f32(), c.found_inf.f32(),
                                             c.max_norm, c.multiplier.f32());
  return Launched(c, "clip_coefficient");
}

}  // namespace mnt::cuda

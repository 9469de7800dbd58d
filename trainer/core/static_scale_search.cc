#include "trainer/core/static_scale_search.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/loss_scale_math.h"
#include "trainer/core/loss_scaling.h"

namespace mnt::trainer {

absl::StatusOr<bool> StaticScaleSearch::FiniteAt(int exponent) {
  const float scale = std::ldexp(1.0f, exponent);
  const std::vector<MNT_Tensor> weights = p_.params->WeightTensors();
  // The step's own loss multiplier: scale * (1 / micro_batches) in fp32.
  const float multiplier = scale * (1.0f / static_cast<float>(p_.micro_batches));
  if (auto s = sdk::ToAbsl(p_.model->Forward(weights, p_.inputs, p_.targets, /*training=*/true,
                                             F32Scalar(p_.scalars->loss)));
      !s.ok())
    return absl::Status(s.code(), absl::StrCat("model forward: ", s.message()));
  if (auto s = sdk::ToAbsl(
          p_.model->Backward(weights, p_.params->GradTensors(), multiplier, /*accumulate=*/false));
      !s.ok())
    return absl::Status(s.code(), absl::StrCat("model backward: ", s.message()));
  // Into the fp32 master gradients as a step's first micro-batch goes, then
  // the step's check: unscaled by 1/scale, inf/NaN found or not.
  if (auto s = p_.params->AccumulateMasterGradients(0); !s.ok()) return s;
  if (auto s = WriteScalar<float>(*p_.client, p_.scalars->inv_scale.data(), InvScale(scale));
      !s.ok())
    return s;
  LossScalingContext check;
  check.client = p_.client;
  check.scalars = p_.scalars;
  if (auto s = UnscaleAndFindInf(check, p_.params->OptimizerGradTensors()); !s.ok()) return s;
  auto found = ReadScalar<float>(*p_.client, p_.scalars->found_inf.data());
  if (!found.ok()) return found.status();
  return *found == 0.0f;
}

absl::StatusOr<double> StaticScaleSearch::LargestFiniteScale(double failing_scale) {
  // Every exponent >= `high` overflows: 2^high is the failing scale or
  // above it.
  int high = 0;
  const double mantissa = std::frexp(failing_scale, &high);
  if (mantissa == 0.5) --high;  // failing_scale is 2^high itself
  int low = kMinExponent;
  if (high <= low) return 0.0;
  auto finite = FiniteAt(low);
  if (!finite.ok()) return finite.status();
  if (!*finite) return 0.0;
  // 2^low is finite, 2^high overflows.
  while (high - low > 1) {
    const int mid = low + (high - low) / 2;
    auto f = FiniteAt(mid);
    if (!f.ok()) return f.status();
    (*f ? low : high) = mid;
  }
  return std::ldexp(1.0, low);
}

absl::StatusOr<SkipGuard::ScaleAdvice> StaticScaleSearch::Advise(double failing_scale) {
  auto largest = LargestFiniteScale(failing_scale);
  if (!largest.ok()) return largest.status();
  SkipGuard::ScaleAdvice advice;
  advice.largest_finite = *largest;
  if (*largest > 0) {
    advice.suggested =
        std::max(std::ldexp(1.0, kMinExponent), std::ldexp(*largest, -kHeadroomBits));
  }
  return advice;
}

}  // namespace mnt::trainer

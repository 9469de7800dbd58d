#include "trainer/core/fault_observer.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"
#include "trainer/parallel/fault_injection.h"

namespace mnt::trainer {

bool FaultObserver::Requested() {
  return InfGradientFault().has_value() || FillWeightsFault().has_value();
}

absl::Status FaultObserver::OnStepBegin(const StepContext& c) {
  const auto& fault = FillWeightsFault();
  if (!fault.has_value() || fault->step != c.step) return absl::OkStatus();
  for (const Param& p : params_->params()) {
    if (p.name != fault->param) continue;
    const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, fault->value};
    return sdk::ToAbsl(client_->Run(MNT_OP_FILL, {}, {params_->WorkingWeights(p)}, &fill));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("MANTISSA_FAULT_FILL_WEIGHTS: the model has no parameter '", fault->param, "'"));
}

absl::Status FaultObserver::BeforeExchange(const StepContext& c) {
  const auto& fault = InfGradientFault();
  if (!fault.has_value() || fault->rank != rank_ || fault->step != c.step) {
    return absl::OkStatus();
  }
  const MNT_Tensor flat = params_->FlatOptimizerGrads();
  if (flat.dtype != MNT_DTYPE_F32) {
    return absl::FailedPreconditionError(
        "MANTISSA_FAULT_INF_GRADIENT: the exchanged gradient is not fp32");
  }
  const float inf = std::numeric_limits<float>::infinity();
  return sdk::ToAbsl(client_->ToDevice(flat.data, &inf, sizeof inf));
}

}  // namespace mnt::trainer

#include "trainer/core/fp8_observer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/abi_enum.h"

namespace mnt::trainer {
namespace {

absl::Status Prefixed(const absl::Status& s, const char* prefix) {
  return s.ok() ? s : absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

}  // namespace

std::string Fp8Observer::Announcement() const {
  const MNT_Precision_GetScalingRecipe_Args& r = fp8_->recipe();
  const std::string formats = absl::StrCat(sdk::DTypeName(r.forward_dtype), " forward, ",
                                           sdk::DTypeName(r.backward_dtype), " gradients");
  std::string recipe;
  if (fp8_->delayed()) {
    recipe = absl::StrCat("delayed scaling, amax history ", r.history_length, " (",
                          r.amax_algo == MNT_AMAX_ALGO_MAX ? "max" : "most recent", ")",
                          r.calibrate != 0 ? ", calibrated on the first batch" : "");
  } else {
    recipe = "current scaling";
  }
  return absl::StrCat("FP8 GEMMs: ", formats, ", ", recipe, ", margin ", r.margin,
                      r.fast_accumulation_forward != 0 ? ", fast accumulation forward" : "",
                      "; scaling state ", absl::StrFormat("%.1f KiB", fp8_->device_bytes() / 1024.0),
                      " on the device (", 3 * fp8_->slots(), " tensor slots)");
}

absl::Status Fp8Observer::OnMicroBatchBegin(const StepContext& c) {
  // Before the first step of a fresh run with a calibrating recipe: one
  // forward and backward of the uploaded batch that only records amax, and
  // the update. The gradients it writes are overwritten by the step's first
  // backward.
  if (c.step != 1 || c.micro != 0 || !fp8_->delayed() || fp8_->recipe().calibrate == 0) {
    return absl::OkStatus();
  }
  if (auto s = sdk::ToAbsl(model_->Forward(c.weights, c.inputs, c.targets, /*training=*/true,
                                            c.loss_out));
      !s.ok())
    return Prefixed(s, "FP8 calibration forward: ");
  if (auto s = sdk::ToAbsl(model_->Backward(c.weights, c.grads, c.loss_multiplier,
                                             c.DeviceLossMultiplier(), /*accumulate=*/false));
      !s.ok())
    return Prefixed(s, "FP8 calibration backward: ");
  return Update();
}

absl::Status Fp8Observer::Update() {
  // As Transformer Engine's fp8_autocast per micro-batch: with gradient
  // accumulation every micro-batch is measured.
  if (!fp8_->delayed()) return absl::OkStatus();
  if (auto s = max_over_ranks_(fp8_->flat_amax()); !s.ok()) return s;
  return fp8_->Update();
}

absl::Status Fp8Observer::OnStepReported(const StepContext& c, StepMetrics* m) {
  // At --log_every (one device read each), like the console.
  const bool due = c.step == 1 || c.step == total_steps_ ||
                   (log_every_ > 0 && c.step % log_every_ == 0);
  if (!due) return absl::OkStatus();
  auto entries = fp8_->Read();
  if (!entries.ok()) return entries.status();
  for (const Fp8Scaling::Entry& e : *entries) m->fp8_scales.push_back({e.name, e.scale, e.amax});
  return absl::OkStatus();
}

}  // namespace mnt::trainer

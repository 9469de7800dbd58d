#include "trainer/core/loss_scaling_choice.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/loss_scale_math.h"
#include "trainer/core/device_loss_scaling.h"
#include "trainer/core/host_loss_scaling.h"

namespace mnt::trainer {
namespace {

std::string RecipeText(const LossScaleRecipeParams& p) {
  std::string s = absl::StrFormat("growth_factor=%g, backoff_factor=%g, growth_interval=%d",
                                  p.growth_factor, p.backoff_factor, p.growth_interval);
  if (p.hysteresis != 1) absl::StrAppendFormat(&s, ", hysteresis=%d", p.hysteresis);
  if (p.min_scale > 0) absl::StrAppendFormat(&s, ", min_scale=%g", p.min_scale);
  if (p.max_scale > 0) absl::StrAppendFormat(&s, ", max_scale=%g", p.max_scale);
  return s;
}

// Why the backend cannot run `recipe`; "" when it can (then `amp` holds it).
std::string BackendCannotRun(const mantissa::TrainConfig& config,
                             const sdk::BackendInstance& backend,
                             const std::string& device_name,
                             const LossScaleRecipeParams& r, MNT_AmpUpdateScaleParams* amp) {
  for (MNT_Op op : {MNT_OP_AMP_UPDATE_SCALE, MNT_OP_CLIP_COEFFICIENT}) {
    if (!backend.Supports(op)) {
      return absl::StrCat("backend '", device_name, "' does not support ",
                          sdk::OpName(op), " (ABI 1.4)");
    }
  }
  const MNT_Api_Version& v = backend.plugin()->abi_version;
  if (config.optimizer().name() != "sgd" &&
      !sdk::HasCapability(backend.plugin(), MNT_CAPABILITY_ADAMW_STEP_COUNTER)) {
    return absl::StrFormat(
        "backend '%s' (ABI %d.%d) does not offer ADAMW_STEP's device step counter "
        "(capability ADAMW_STEP_COUNTER, ABI 1.4)%s",
        device_name, v.major_version, v.minor_version,
        sdk::RebuiltSourceHint(backend.plugin(), MNT_CAPABILITY_ADAMW_STEP_COUNTER));
  }
  const bool needs_recipe = r.hysteresis != 1 || r.min_scale != 0 || r.max_scale != 0;
  if (needs_recipe &&
      !sdk::HasCapability(backend.plugin(), MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE)) {
    return absl::StrFormat(
        "backend '%s' (ABI %d.%d) does not offer AMP_UPDATE_SCALE's hysteresis, "
        "min_scale and max_scale (capability AMP_UPDATE_SCALE_RECIPE, ABI 1.5)%s",
        device_name, v.major_version, v.minor_version,
        sdk::RebuiltSourceHint(backend.plugin(), MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE));
  }
  if (!ExactInFloat(r.growth_factor) || !ExactInFloat(r.backoff_factor)) {
    return absl::StrFormat(
        "growth_factor=%.17g and backoff_factor=%.17g must be exact in fp32 "
        "(AMP_UPDATE_SCALE takes fp32 factors)",
        r.growth_factor, r.backoff_factor);
  }
  if (r.growth_interval > std::numeric_limits<int32_t>::max()) {
    return absl::StrCat("growth_interval=", r.growth_interval,
                        " does not fit the I32 tracker");
  }
  *amp = {needs_recipe ? MNT_AmpUpdateScaleParams_STRUCT_SIZE
                    : MNT_AmpUpdateScaleParams_STRUCT_SIZE_1_4,
          static_cast<float>(r.growth_factor),
          static_cast<float>(r.backoff_factor),
          static_cast<int32_t>(r.growth_interval),
          r.hysteresis,
          r.min_scale,
          r.max_scale};
  return "";
}

// A run that does not scale its loss keeps its step's scalars on the device
// (the clip factor by CLIP_COEFFICIENT, AdamW's step count in ADAMW_STEP's
// 1.4 counter) when the backend has them.
bool BackendRunsUnscaledStep(const mantissa::TrainConfig& config,
                             const sdk::BackendInstance& backend) {
  if (!backend.Supports(MNT_OP_CLIP_COEFFICIENT)) return false;
  return config.optimizer().name() == "sgd" ||
         sdk::HasCapability(backend.plugin(), MNT_CAPABILITY_ADAMW_STEP_COUNTER);
}

}  // namespace

absl::StatusOr<LossScalingPlan> PlanLossScaling(
    const mantissa::TrainConfig& config, const sdk::BackendInstance& backend,
    const std::string& device_name, const sdk::LossScalerClient& scaler,
    const std::string& precision_name, bool scaling_active) {
  LossScalingPlan plan;
  const std::string& mode = config.device_loss_scaling();
  if (!scaling_active) {  // no scale to place; the clip factor and losses
    if (mode == "on") {
      return absl::FailedPreconditionError(
          absl::StrCat("--device_loss_scaling=on: precision '", precision_name,
                       "' does not use dynamic loss scaling (use auto or off)"));
    }
    plan.on_device = mode != "off" && BackendRunsUnscaledStep(config, backend);
    return plan;
  }
  sdk::LossScalerRecipe recipe;
  if (auto s = sdk::ToAbsl(scaler.GetRecipe(&recipe)); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("precision '", precision_name,
                                               "' loss scaling: ", s.message()));
  }
  if (recipe.declared) plan.min_scale = recipe.params.min_scale;
  std::string why;
  if (!recipe.declared) {
    why = absl::StrCat("precision '", precision_name,
                       "' declares no loss-scale recipe; its LossScaler_Update "
                       "runs every step");
  } else if (mode == "off") {
    why = "--device_loss_scaling=off";
  } else {
    why = BackendCannotRun(config, backend, device_name, recipe.params, &plan.amp);
  }
  if (why.empty()) {
    plan.on_device = true;
    plan.description = absl::StrCat("loss scaling: on the device (precision '",
                                    precision_name, "' declares the dynamic recipe: ",
                                    RecipeText(recipe.params), ")");
    return plan;
  }
  if (mode == "on") {
    return absl::FailedPreconditionError(
        absl::StrCat("--device_loss_scaling=on: ", why, " (use auto or off)"));
  }
  plan.description = absl::StrCat("loss scaling: on the host (", why, ")");
  return plan;  // auto: the device path when it can, else the host path
}

absl::StatusOr<std::unique_ptr<LossScaling>> MakeLossScaling(
    const LossScalingPlan& plan, const LossScalingContext& context,
    bool scaling_active, Optimizer* optimizer, const std::string& device_name) {
  if (!plan.on_device) return std::make_unique<HostLossScaling>(context, scaling_active);
  auto device =
      DeviceLossScaling::Create(context, plan.amp, optimizer, device_name, scaling_active);
  if (!device.ok()) return device.status();
  return std::unique_ptr<LossScaling>(std::move(*device));
}

}  // namespace mnt::trainer

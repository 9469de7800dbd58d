#include "trainer/core/loss_scaling_choice.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/sdk/backend_client.h"
#include "trainer/core/device_formula_probe.h"
#include "trainer/core/device_loss_scaling.h"
#include "trainer/core/host_loss_scaling.h"
#include "trainer/core/loss_scale_config.h"

namespace mnt::trainer {
namespace {

// GradScaler's defaults, which the precision ABI documents for the loss
// scaler options (mnt_precision.h); a plugin that differs is caught by the
// start-up probe against the device formula.
constexpr double kDefaultGrowthFactor = 2.0;
constexpr double kDefaultBackoffFactor = 0.5;
constexpr int64_t kDefaultGrowthInterval = 2000;

// Why the device path cannot run this configuration; "" when it can (then
// `amp` holds its parameters).
std::string DeviceLossScalingUnavailable(
    const mantissa::TrainConfig& config, const sdk::BackendInstance& backend,
    const std::string& device_name, const MNT_Plugin_Api* precision_plugin,
    const std::string& precision_name, MNT_LossScaling plugin_default,
    MNT_AmpUpdateScaleParams* amp) {
  const mantissa::LossScaleConfig& ls = config.loss_scale();
  if (!LossScalingDynamic(ls, plugin_default)) {
    return absl::StrCat("precision '", precision_name,
                        "' does not use dynamic loss scaling");
  }
  for (MNT_Op op : {MNT_OP_AMP_UPDATE_SCALE, MNT_OP_CLIP_COEFFICIENT}) {
    if (!backend.Supports(op)) {
      return absl::StrCat("backend '", device_name, "' does not support ",
                          sdk::OpName(op), " (ABI 1.4)");
    }
  }
  const MNT_Api_Version& v = backend.plugin()->abi_version;
  if (config.optimizer().name() != "sgd" && v.minor_version < 4) {
    return absl::StrFormat(
        "backend '%s' is built against ABI %d.%d; ADAMW_STEP's device step "
        "counter needs 1.4",
        device_name, v.major_version, v.minor_version);
  }
  const double growth = ls.growth_factor() > 0 ? ls.growth_factor() : kDefaultGrowthFactor;
  const double backoff = ls.backoff_factor() > 0 ? ls.backoff_factor() : kDefaultBackoffFactor;
  const int64_t interval =
      ls.growth_interval() > 0 ? ls.growth_interval() : kDefaultGrowthInterval;
  if (static_cast<double>(static_cast<float>(growth)) != growth ||
      static_cast<double>(static_cast<float>(backoff)) != backoff) {
    return absl::StrFormat(
        "growth_factor=%.17g and backoff_factor=%.17g must be exact in fp32 "
        "(AMP_UPDATE_SCALE takes fp32 factors)",
        growth, backoff);
  }
  if (interval > std::numeric_limits<int32_t>::max()) {
    return absl::StrCat("growth_interval=", interval, " does not fit the I32 tracker");
  }
  *amp = {MNT_AmpUpdateScaleParams_STRUCT_SIZE, static_cast<float>(growth),
          static_cast<float>(backoff), static_cast<int32_t>(interval)};
  return ScalerDisagreesWithDeviceFormula(precision_plugin, precision_name,
                                          LossScalerOptions(ls), *amp);
}

}  // namespace

absl::StatusOr<LossScalingPlan> PlanLossScaling(
    const mantissa::TrainConfig& config, const sdk::BackendInstance& backend,
    const std::string& device_name, const MNT_Plugin_Api* precision_plugin,
    const std::string& precision_name, MNT_LossScaling plugin_default) {
  LossScalingPlan plan;
  const std::string& mode = config.device_loss_scaling();
  if (mode == "off") return plan;
  const std::string why =
      DeviceLossScalingUnavailable(config, backend, device_name, precision_plugin,
                                   precision_name, plugin_default, &plan.amp);
  if (why.empty()) {
    plan.on_device = true;
  } else if (mode == "on") {
    return absl::FailedPreconditionError(
        absl::StrCat("--device_loss_scaling=on: ", why, " (use auto or off)"));
  }
  return plan;  // auto: the device path when it can, else the host path
}

absl::StatusOr<std::unique_ptr<LossScaling>> MakeLossScaling(
    const LossScalingPlan& plan, const LossScalingContext& context,
    bool scaling_active, Optimizer* optimizer, const std::string& device_name) {
  if (!plan.on_device) return std::make_unique<HostLossScaling>(context, scaling_active);
  auto device = DeviceLossScaling::Create(context, plan.amp, optimizer, device_name);
  if (!device.ok()) return device.status();
  return std::unique_ptr<LossScaling>(std::move(*device));
}

}  // namespace mnt::trainer

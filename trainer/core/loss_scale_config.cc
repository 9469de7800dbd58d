#include "trainer/core/loss_scale_config.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace mnt::trainer {

std::string LossScalerOptions(const mantissa::LossScaleConfig& c) {
  std::vector<std::string> parts;
  if (!c.mode().empty()) parts.push_back(absl::StrCat("mode=", c.mode()));
  if (c.init_scale() > 0)
    parts.push_back(absl::StrFormat("init_scale=%.17g", c.init_scale()));
  if (c.growth_factor() > 0)
    parts.push_back(absl::StrFormat("growth_factor=%.17g", c.growth_factor()));
  if (c.backoff_factor() > 0)
    parts.push_back(absl::StrFormat("backoff_factor=%.17g", c.backoff_factor()));
  if (c.growth_interval() > 0)
    parts.push_back(absl::StrCat("growth_interval=", c.growth_interval()));
  return absl::StrJoin(parts, ",");
}

bool LossScalingActive(const mantissa::LossScaleConfig& c,
                       MNT_LossScaling plugin_default) {
  return !(plugin_default == MNT_LOSS_SCALING_NONE && c.mode().empty()) &&
         c.mode() != "none";
}

bool LossScalingDynamic(const mantissa::LossScaleConfig& c,
                        MNT_LossScaling plugin_default) {
  return LossScalingActive(c, plugin_default) &&
         (c.mode() == "dynamic" ||
          (c.mode().empty() && plugin_default == MNT_LOSS_SCALING_DYNAMIC));
}

}  // namespace mnt::trainer

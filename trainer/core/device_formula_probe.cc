#include "trainer/core/device_formula_probe.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/sdk/loss_scaler_client.h"

namespace mnt::trainer {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

}  // namespace

std::string ScalerDisagreesWithDeviceFormula(
    const MNT_Plugin_Api* precision_plugin, const std::string& precision_name,
    const std::string& scaler_options, const MNT_AmpUpdateScaleParams& amp) {
  sdk::LossScalerClient scaler;
  if (!sdk::LossScalerClient::Create(precision_plugin, scaler_options, &scaler).ok()) {
    return "the precision plugin's loss scaler could not be probed";
  }
  MNT_LossScalerState st{};
  if (!scaler.GetState(&st).ok()) {
    return "the precision plugin's loss scaler state could not be read";
  }
  float scale = st.scale;
  int32_t tracker = static_cast<int32_t>(st.growth_tracker);
  const int64_t clean = amp.growth_interval <= 100000 ? amp.growth_interval : 3;
  std::vector<bool> sequence{true};
  sequence.insert(sequence.end(), clean, false);
  sequence.insert(sequence.end(), {true, true});
  sequence.insert(sequence.end(), clean, false);
  for (size_t i = 0; i < sequence.size(); ++i) {
    sdk::LossScalerUpdate u;
    if (!scaler.Update(sequence[i], &u).ok()) {
      return "the precision plugin's loss scaler update failed while probing";
    }
    AmpUpdateScale(sequence[i], amp.growth_factor, amp.backoff_factor,
                   amp.growth_interval, &scale, &tracker);
    if (Bits(u.new_scale) != Bits(scale) || u.skip() != sequence[i]) {
      return absl::StrFormat(
          "precision '%s' loss scaler does not follow GradScaler's update with "
          "growth_factor=%g, backoff_factor=%g, growth_interval=%d (probe step %d: "
          "scale %g, the device formula gives %g)",
          precision_name, amp.growth_factor, amp.backoff_factor,
          amp.growth_interval, i + 1, u.new_scale, scale);
    }
  }
  return "";
}

}  // namespace mnt::trainer

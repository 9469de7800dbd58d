// Whether the precision plugin's loss scaler follows AMP_UPDATE_SCALE's
// formula (GradScaler's update) for the run's options, found by driving a
// scratch scaler. The device path replaces the plugin's LossScaler_Update by
// that formula, so it may run only when both agree bit for bit.
#ifndef MANTISSA_TRAINER_CORE_DEVICE_FORMULA_PROBE_H_
#define MANTISSA_TRAINER_CORE_DEVICE_FORMULA_PROBE_H_

#include <string>

#include "plugins/abi/mantissa.h"

namespace mnt::trainer {

// A scratch scaler created with `scaler_options` is fed a found_inf
// sequence (a backoff, a full growth interval, two backoffs, another
// interval). "" when every step's scale and skip match `amp`'s formula;
// otherwise why not, in one line.
std::string ScalerDisagreesWithDeviceFormula(
    const MNT_Plugin_Api* precision_plugin, const std::string& precision_name,
    const std::string& scaler_options, const MNT_AmpUpdateScaleParams& amp);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_DEVICE_FORMULA_PROBE_H_

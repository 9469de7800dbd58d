// What the --loss_scale_* flags (TrainConfig.loss_scale) mean for the
// precision plugin's loss scaler: the options string LossScaler_Create gets,
// and whether the run scales its loss at all.
#ifndef MANTISSA_TRAINER_CORE_LOSS_SCALE_CONFIG_H_
#define MANTISSA_TRAINER_CORE_LOSS_SCALE_CONFIG_H_

#include <string>

#include "plugins/abi/mnt_precision.h"
#include "trainer/config/train_config.pb.h"

namespace mnt::trainer {

// "mode=...,init_scale=...,..." with the fields that are set; empty fields
// keep the plugin's defaults (GradScaler's for fp16). Numbers are printed
// with %.17g: the plugin sees exactly the value given (2^40 stays 2^40).
std::string LossScalerOptions(const mantissa::LossScaleConfig& config);

// Scaling is on unless the scaler is the identity: mode=none, or no mode
// given and a plugin whose default is none.
bool LossScalingActive(const mantissa::LossScaleConfig& config,
                       MNT_LossScaling plugin_default);

// Active and dynamic (mode=dynamic, or no mode and a dynamic default).
bool LossScalingDynamic(const mantissa::LossScaleConfig& config,
                        MNT_LossScaling plugin_default);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LOSS_SCALE_CONFIG_H_

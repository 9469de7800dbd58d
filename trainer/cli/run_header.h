// The RunHeader a run's sinks get before its first step: what was asked
// (the config), what was resolved (device, precision), what was loaded (each
// plugin with its ABI version and file) and with which libraries.
#ifndef MANTISSA_TRAINER_CLI_RUN_HEADER_H_
#define MANTISSA_TRAINER_CLI_RUN_HEADER_H_

#include <string>

#include "trainer/config/config.h"
#include "trainer/core/metrics.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// `resumed_from`: the checkpoint the trainer was restored from, or "".
RunHeader MakeRunHeader(const TrainConfig& config, const Trainer& trainer,
                        const PluginRegistry& registry, int targets_per_example,
                        const std::string& resumed_from);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_RUN_HEADER_H_

// train --eval_only: the restored checkpoint evaluated on the validation
// data (loss, perplexity, accuracy), printed and written to the metrics
// JSONL when one is asked for; nothing is trained or saved.
#ifndef MANTISSA_TRAINER_CLI_EVAL_ONLY_H_
#define MANTISSA_TRAINER_CLI_EVAL_ONLY_H_

#include <string>

#include "trainer/config/config.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// The process's exit status: 0, or 1 after one error line.
int EvaluateOnly(const TrainConfig& config, Trainer& trainer, const PluginRegistry& registry,
                 int targets_per_example, const std::string& checkpoint);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_EVAL_ONLY_H_

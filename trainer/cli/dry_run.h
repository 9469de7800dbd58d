// train --dry_run: the device memory the run a command describes would
// take, by category, from the trainer's dry run (trainer/dryrun), and
// whether it fits the device; nothing is trained or written.
#ifndef MANTISSA_TRAINER_CLI_DRY_RUN_H_
#define MANTISSA_TRAINER_CLI_DRY_RUN_H_

#include <cstdint>
#include <cstdio>

#include "absl/status/status.h"
#include "plugins/abi/mantissa.h"
#include "trainer/config/config.h"
#include "trainer/dryrun/memory_estimate.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// What the estimator needs of `config` for one of `ranks` ranks, examples
// as `spec` describes them (the dry run's and --batch_size=auto's setup).
memory::EstimateSetup EstimateSetupFor(const TrainConfig& config, int64_t ranks,
                                       const MNT_DataSpec& spec);

// Prints the estimate of `config` (resolved; precision auto: each precision
// the probe may choose) for one of `ranks` ranks, examples as `spec`
// describes them, to `out`.
absl::Status PrintDryRun(const TrainConfig& config, PluginRegistry* registry, int64_t ranks,
                         const MNT_DataSpec& spec, FILE* out);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_DRY_RUN_H_

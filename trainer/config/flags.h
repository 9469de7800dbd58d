// Command-line flags for every TrainConfig field (flat names: --lr, --dataset,
// --loss_scale_mode, ...) plus --config=path.textproto.
//
// The flags are defined in flags.cc; the library is alwayslink so they exist
// in every binary that depends on it, even if it calls nothing from here.
#ifndef MANTISSA_TRAINER_CONFIG_FLAGS_H_
#define MANTISSA_TRAINER_CONFIG_FLAGS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/status/statusor.h"
#include "trainer/config/config.h"

namespace mnt {
namespace trainer {

// Call after absl::ParseCommandLine. Builds
//   DefaultTrainConfig()  <- the --config file (if given)
//                         <- every flag given on the command line
// (a flag given explicitly wins even when equal to its default value), then
// validates. Errors are one line naming the flag or file line at fault.
absl::StatusOr<TrainConfig> ConfigFromFlags();

// As ConfigFromFlags(), over `base` instead of DefaultTrainConfig(): a
// resumed run's saved config, which the --config file and the flags then
// change.
absl::StatusOr<TrainConfig> ConfigFromFlagsOver(const TrainConfig& base);

// As ConfigFromFlags() without its validation: what a resumed run's flags
// say on their own, which may be valid only over the run's saved config
// (--optimizer_options for the run's --optimizer=adamw8bit). Errors: only
// the merge's own (the --config file, flags that contradict each other).
absl::StatusOr<TrainConfig> UncheckedConfigFromFlags();

// Whether the flag `name` (without dashes) was given on the command line,
// even with its default value, or through an alias (--fp16 gives
// "precision").
bool FlagGivenOnCommandLine(const std::string& name);

// Whether the user chose the field behind flag `name`: on the command line,
// or in the --config file (a field the file names, even with value 0).
// Model and device defaults fill in only what the user did not choose.
bool FieldChosenByUser(const std::string& name);

// The TrainConfig field behind flag `name`, as a dotted path
// ("optimizer.lr", "schedule.kind"); "" for a flag with no field.
std::string FieldPathOfFlag(const std::string& name);

// (alias, canonical flag) for every Hugging Face-style alias: --bf16,
// --fp16, --tf32 (precision), --gradient_accumulation_steps,
// --max_grad_norm, --lr_scheduler.
std::vector<std::pair<std::string, std::string>> FlagAliasNames();

// Same, with `is_set` deciding which flags count as given (test seam; the
// plain overload asks absl whether the flag was on the command line).
absl::StatusOr<TrainConfig> ConfigFromFlags(
    const std::function<bool(const absl::CommandLineFlag&)>& is_set,
    const TrainConfig& base = DefaultTrainConfig());

// Names of the flags mapped to TrainConfig fields (without --config).
std::vector<std::string> TrainConfigFlagNames();

// Applies the current value of every mapped flag to *config, whether given
// or not (used to check that the flags' defaults equal DefaultTrainConfig()).
void ApplyAllFlags(TrainConfig* config);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_CONFIG_FLAGS_H_

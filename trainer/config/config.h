// Default values, validation and text-format loading of TrainConfig.
#ifndef MANTISSA_TRAINER_CONFIG_CONFIG_H_
#define MANTISSA_TRAINER_CONFIG_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/config/train_config.pb.h"

namespace mnt {
namespace trainer {

using ::mantissa::DataConfig;
using ::mantissa::LossScaleConfig;
using ::mantissa::OptimizerConfig;
using ::mantissa::ScheduleConfig;
using ::mantissa::TrainConfig;

// The configuration a run uses when nothing is specified: an MLP on the
// scikit-learn digits with AdamW and a warmed-up cosine schedule.
TrainConfig DefaultTrainConfig();

// OK, or InvalidArgument with one line naming the first bad field by its flag
// name and listing what is allowed, e.g.
// "--precision=fp-8 is invalid: expected one of fp32, tf32, bf16, fp16, fp8, auto, or the
// name of a plugin".
absl::Status ValidateTrainConfig(const TrainConfig& config);

// Parses text-format `text` on top of `*config`: fields the text names replace
// the ones in *config (even when set to 0/""/false), the rest are kept.
// `source_name` prefixes errors: "<source_name>:<line>:<column>: <problem>".
// Does not validate.
absl::Status MergeTextConfig(const std::string& text,
                             const std::string& source_name,
                             TrainConfig* config);

// A text config larger than this is refused rather than read (no real one is
// more than a few KB; a device or a huge file must not be slurped).
inline constexpr int64_t kMaxConfigBytes = 16 << 20;

// Same as MergeTextConfig with the contents of the file at `path` (a regular
// file: a directory or device is refused, not read as an empty config).
absl::Status MergeTextConfigFile(const std::string& path, TrainConfig* config);

// DefaultTrainConfig() overridden by the text-format file at `path`, validated.
absl::StatusOr<TrainConfig> LoadTextConfig(const std::string& path);

// Expands a leading ~ (user_path.h) in every path field: the data files,
// cache_dir, checkpoint_dir, resume_from, metrics_jsonl, tensorboard_dir and
// each ':'-separated entry of plugin_path.
void ExpandUserPaths(TrainConfig* config);

// Text format of `config` that LoadTextConfig/MergeTextConfig read back
// (every field printed, so defaults are not re-applied to zero values).
std::string ConfigToText(const TrainConfig& config);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_CONFIG_CONFIG_H_

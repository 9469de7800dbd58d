// The parts of a run's plan that Hugging Face's Trainer derives from other
// settings, resolved by the command line where the settings become known:
//   the linear schedule's floor (0, as Hugging Face's; cosine keeps
//     nanoGPT's 10%) unless --min_lr_ratio is given;
//   --report_to's files (--tensorboard_dir, --metrics_jsonl) inside the
//     run's folder, once the folder is known;
//   --num_train_epochs as steps, once the data is loaded.
#ifndef MANTISSA_TRAINER_CLI_RUN_SCHEDULE_H_
#define MANTISSA_TRAINER_CLI_RUN_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

// The floor of the decay when --min_lr_ratio is not `given` (as in
// model_defaults.h): 0 for the linear schedule. DefaultTrainConfig()'s 0.1
// stays for cosine.
void ApplyScheduleDefaults(const std::function<bool(const std::string&)>& given,
                           TrainConfig* config);

// --report_to against the run's folder (config->checkpoint_dir(), resolved;
// "" = the run keeps none): tensorboard fills an empty --tensorboard_dir
// with <checkpoint_dir>/tensorboard, jsonl an empty --metrics_jsonl with
// <checkpoint_dir>/metrics.jsonl (and creates the folder, which the log
// opens before the first checkpoint), all both. none with either of them set,
// a default wanted without a folder, and --save_best without a folder are
// one-line errors.
absl::Status ResolveRunOutputs(TrainConfig* config);

// The global batch of one optimizer step over all `world_size` ranks:
// --global_batch_size when set, else batch_size x grad_accum_steps x ranks.
int64_t GlobalBatch(const TrainConfig& config, int64_t world_size);

// --num_train_epochs > 0: sets steps to ceil(epochs x train_examples /
// GlobalBatch) (at least 1) and returns the line that says so; "" when the
// run is given in steps. More steps than the trainer counts are refused.
absl::StatusOr<std::string> ResolveEpochs(int64_t train_examples, int64_t world_size,
                                          TrainConfig* config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_RUN_SCHEDULE_H_

// The config of a run, as text format, beside its checkpoints: what
// `--config` reads back to continue (--resume) or evaluate (--eval_only)
// the run without retyping its flags. Written by the trainer after a
// checkpoint is saved (so a run that fails to save changes nothing).
#ifndef MANTISSA_TRAINER_CHECKPOINT_RUN_CONFIG_FILE_H_
#define MANTISSA_TRAINER_CHECKPOINT_RUN_CONFIG_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

inline constexpr char kRunConfigFileName[] = "train_config.txtpb";
// The run's SentencePiece model (--tokenizer=sentencepiece), copied beside
// its checkpoints so `sample` and later runs find it with them.
inline constexpr char kTokenizerFileName[] = "tokenizer.model";

// The text `config` is saved as: every field as resolved for the run, paths
// made absolute (the config is read back from anywhere), but the ones that
// say how this invocation started (resume, resume_if_exists, resume_from,
// eval_only), which the next command chooses.
std::string RunConfigText(const TrainConfig& config);

// Writes RunConfigText to <checkpoint_dir>/train_config.txtpb (atomically)
// and returns the path; with a tokenizer model, copies it to
// <checkpoint_dir>/tokenizer.model first and the saved config names the copy.
absl::StatusOr<std::string> SaveRunConfig(const TrainConfig& config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CHECKPOINT_RUN_CONFIG_FILE_H_

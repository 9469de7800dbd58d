// A checkpoint directory with history:
//   <dir>/checkpoint-<step>   one file per save, named by its optimizer step
//   <dir>/latest              the newest of them (a hard link, so removing an
//                             old step file never touches it)
//   <dir>/best                the one with the lowest eval loss (--save_best;
//                             a hard link too)
// with the oldest step files removed beyond a retention count (Hugging Face's
// --save_total_limit), never the newest nor the best.
#ifndef MANTISSA_TRAINER_CHECKPOINT_CHECKPOINT_HISTORY_H_
#define MANTISSA_TRAINER_CHECKPOINT_CHECKPOINT_HISTORY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mnt {
namespace trainer {

// "<dir>/checkpoint-<step>".
std::string StepCheckpointPath(const std::string& dir, int64_t step);

// The step files in `dir`, oldest step first. Files not named
// checkpoint-<digits> are ignored.
std::vector<std::pair<int64_t, std::string>> ListStepCheckpoints(const std::string& dir);

// "<dir>/best".
std::string BestCheckpointPath(const std::string& dir);

// After `step_file` (in `dir`) has been written: makes <dir>/latest the same
// file (atomically: readers see the old or the new one, never none), then
// removes the oldest step files so that at most `keep` remain (keep <= 0:
// keep all). Never removed: the newest, and the step file <dir>/best is a
// link to (Hugging Face keeps the best checkpoint so too; with keep = 1 that
// leaves two). Where the filesystem has no hard links `best` is a copy, whole
// on its own, and its step file goes as any other. Fills *removed with what
// it deleted.
absl::Status PublishCheckpoint(const std::string& dir, const std::string& step_file,
                               int64_t keep, std::vector<std::string>* removed);

// Makes <dir>/best the same file as `step_file`, atomically as `latest`.
absl::Status PublishBestCheckpoint(const std::string& dir, const std::string& step_file);

// What --resume_from=PATH names: a checkpoint file, or a checkpoint
// directory (its `latest`). NotFound naming the flag (`flag`, as the user
// typed it) and PATH when neither exists.
absl::StatusOr<std::string> ResolveCheckpointPath(const std::string& path,
                                                  const std::string& flag = "--resume_from");

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_CHECKPOINT_CHECKPOINT_HISTORY_H_

// Which run folder an invocation of train reads and which it writes
// (trainer/checkpoint/run_folder.h says what a run folder holds):
//
// - Resuming (--resume_from=PATH, or --resume): PATH, or --checkpoint_dir,
//   or <cache>/runs/<--run_name>, or the newest default folder of this
//   model, dataset and precision. The run's saved config then fills every
//   flag the command does not give.
// - Writing: a resumed run goes on in its own folder. A new run writes
//   --checkpoint_dir or <cache>/runs/<--run_name>, refused when that holds
//   another run's work unless --overwrite_output_dir; without either it
//   takes a fresh default folder, <model>-<dataset>-<precision>[-<N>ranks],
//   numbered -run2, -run3, ... when taken, so two runs never share one.
//   The writer holds the folder's lock while it runs.
#ifndef MANTISSA_TRAINER_CLI_RUN_FOLDER_CHOICE_H_
#define MANTISSA_TRAINER_CLI_RUN_FOLDER_CHOICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/checkpoint/run_folder.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

// <model>-<dataset>-<precision>, plus -<N>ranks for a data-parallel run:
// the name a run's folder gets under <cache>/runs without --run_name.
// `precision` as the command gave it ("auto" stays auto: the checkpoint
// says which precision the probe chose).
std::string DefaultRunFolderBase(const TrainConfig& config, const std::string& precision,
                                 int64_t ranks);

// What the command resumes, when it resumes: `folder` is empty for a fresh
// run, with `note` saying why when --resume=if_exists found nothing.
struct ResumeChoice {
  std::optional<RunFolder> folder;
  std::string note;
};
absl::StatusOr<ResumeChoice> ChooseResumeFolder(const TrainConfig& config,
                                                const std::string& runs_parent,
                                                const std::string& default_base);

// The folder a training run writes, claimed (locked) for the run.
struct WriteFolder {
  std::string dir;              // "" = the run keeps no checkpoints
  bool default_name = false;    // chosen by the naming rule, not by a flag
  bool created = false;         // this run created the folder
  // --overwrite_output_dir over another run's work: what it holds, to be
  // removed (ClearRunFolder) once the run has started.
  RunFolderContents replaced;
  std::unique_ptr<RunFolderLock> lock;
};
absl::StatusOr<WriteFolder> ClaimWriteFolder(const TrainConfig& config,
                                             const std::optional<RunFolder>& resumed,
                                             const std::string& runs_parent,
                                             const std::string& default_base);

// Releases the folder's lock (its file goes), and removes the folder if
// this run created it and nothing was written there: a run that fails
// before its first save leaves no trace.
void ReleaseWriteFolder(WriteFolder* folder);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_RUN_FOLDER_CHOICE_H_

// A run folder, the unit of work: everything one training run keeps, so that
// every tool that takes the folder (train --resume/--resume_from/--eval_only,
// sample, export_hf, export_llmc) needs no flag the folder already answers.
//
//   <dir>/checkpoint-<step>    one file per save (checkpoint_history.h)
//   <dir>/latest               the newest of them (a hard link)
//   <dir>/best                 the lowest evaluation loss so far (--save_best)
//   <dir>/train_config.txtpb   the run's config as resolved (run_config_file.h)
//   <dir>/tokenizer.model      the run's SentencePiece model, if it has one
//   <dir>/.lock                held (flock) while a run writes the folder
//
// A run never writes into a folder that holds another run's work unless told
// to (--resume continues it, --overwrite_output_dir replaces it); default
// folder names are numbered so that two runs never share one.
#ifndef MANTISSA_TRAINER_CHECKPOINT_RUN_FOLDER_H_
#define MANTISSA_TRAINER_CHECKPOINT_RUN_FOLDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

inline constexpr char kRunFolderLockName[] = ".lock";

// What a path given to a tool names: a run folder (its `latest`), or one
// checkpoint file (inside a run folder or not).
struct RunFolder {
  std::string dir;         // the folder, absolute
  std::string checkpoint;  // the checkpoint file to read, absolute
  // <dir>/train_config.txtpb and <dir>/tokenizer.model, "" where absent.
  std::string config_path;
  std::string tokenizer_model;
};

// `path` as typed after `flag` (e.g. "--resume_from"); a leading ~ is
// expanded. NotFound naming the flag and the path when it is neither a
// folder with a `latest` checkpoint nor a file.
absl::StatusOr<RunFolder> OpenRunFolder(const std::string& path, const std::string& flag);

// The run's config as it saved it: DefaultTrainConfig() overridden by
// <dir>/train_config.txtpb (every field, zeros included, is written out),
// with the tokenizer model pointing at the folder's own copy when it has
// one. NotFound when the folder has no saved config.
absl::StatusOr<TrainConfig> ReadRunConfig(const RunFolder& folder);

// What a folder holds of a run's work.
struct RunFolderContents {
  bool exists = false;
  // checkpoint-<step> files, latest, best, train_config.txtpb: the files a
  // new run would overwrite or mix with (sorted names).
  std::vector<std::string> run_files;
  int64_t latest_step = -1;  // the step `latest` is (-1: none, or unknown)
  bool holds_run() const { return !run_files.empty(); }
  // "latest = step 300; 3 checkpoint files, train_config.txtpb": for messages.
  std::string Describe() const;
};
RunFolderContents InspectRunFolder(const std::string& dir);

// Default folder names under `parent`: <base>, then <base>-run2, <base>-run3...
// The folder a new run takes: the first that holds no run's work and that no
// live process holds locked.
std::string FreshRunFolder(const std::string& parent, const std::string& base);
// The folder --resume continues: the highest-numbered that has a `latest`;
// "" when none has.
std::string NewestRunFolder(const std::string& parent, const std::string& base);

// Held while a run writes its folder: an exclusive flock on <dir>/.lock,
// released when the process ends however it ends (so a killed run leaves no
// stale lock). Creates the folder; the file is removed when the lock is
// released. FailedPrecondition naming the holder's pid when another process
// holds it.
class RunFolderLock {
 public:
  static absl::StatusOr<std::unique_ptr<RunFolderLock>> Acquire(const std::string& dir);
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  RunFolderLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Whether a live process other than this one holds <dir>/.lock.
bool RunFolderLocked(const std::string& dir);

// --overwrite_output_dir: removes another run's files from `dir` (the
// run_files of InspectRunFolder, tokenizer.model, and the logs --report_to
// keeps there: metrics.jsonl and the tensorboard/ folder); nothing else in
// the folder is touched. Returns the names removed.
absl::StatusOr<std::vector<std::string>> ClearRunFolder(const std::string& dir);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CHECKPOINT_RUN_FOLDER_H_

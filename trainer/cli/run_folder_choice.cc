#include "trainer/cli/run_folder_choice.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

bool SameFolder(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

std::string DefaultRunFolderBase(const TrainConfig& c, const std::string& precision,
                                 int64_t ranks) {
  return absl::StrCat(c.model(), "-", c.data().dataset(), "-", precision,
                      ranks > 1 ? absl::StrCat("-", ranks, "ranks") : "");
}

absl::StatusOr<ResumeChoice> ChooseResumeFolder(const TrainConfig& c,
                                                const std::string& runs_parent,
                                                const std::string& default_base) {
  ResumeChoice choice;
  if (!c.resume_from().empty()) {
    auto folder = OpenRunFolder(c.resume_from(), "--resume_from");
    if (!folder.ok()) return folder.status();
    choice.folder = std::move(*folder);
    return choice;
  }
  if (!c.resume() && !c.resume_if_exists()) return choice;
  if (c.checkpoint_dir() == "none") {
    return absl::InvalidArgumentError(
        "--resume is invalid with --checkpoint_dir=none: expected a directory to resume "
        "from (or --resume_from=<checkpoint file or directory>)");
  }
  std::string dir;
  std::string where;  // for the message when there is nothing to resume
  if (!c.checkpoint_dir().empty()) {
    dir = c.checkpoint_dir();
    where = LatestCheckpointPath(dir);
  } else if (!c.run_name().empty()) {
    dir = absl::StrCat(runs_parent, "/", c.run_name());
    where = LatestCheckpointPath(dir);
  } else {
    dir = NewestRunFolder(runs_parent, default_base);
    where = absl::StrCat(runs_parent, "/", default_base, "[-run<N>]/latest");
  }
  std::error_code ec;
  if (dir.empty() || !fs::exists(LatestCheckpointPath(dir), ec)) {
    if (c.resume_if_exists() && !c.eval_only()) {
      choice.note = absl::StrCat("no checkpoint at ", where, "; starting fresh (--resume=if_exists)");
      return choice;
    }
    // A typo in a path or a run name must not silently start over.
    return absl::NotFoundError(absl::StrCat(
        "--resume: no checkpoint at ", where,
        " (--resume=if_exists starts fresh when there is none; --resume_from=PATH "
        "resumes another run's folder or checkpoint)"));
  }
  auto folder = OpenRunFolder(dir, "--resume");
  if (!folder.ok()) return folder.status();
  choice.folder = std::move(*folder);
  return choice;
}

absl::StatusOr<WriteFolder> ClaimWriteFolder(const TrainConfig& c,
                                             const std::optional<RunFolder>& resumed,
                                             const std::string& runs_parent,
                                             const std::string& default_base) {
  WriteFolder w;
  if (c.checkpoint_dir() == "none") return w;
  // A fresh default folder can be taken by another run between the look and
  // the lock: look again then.
  for (int attempt = 0;; ++attempt) {
    if (!c.checkpoint_dir().empty()) {
      w.dir = c.checkpoint_dir();
    } else if (!c.run_name().empty()) {
      w.dir = absl::StrCat(runs_parent, "/", c.run_name());
    } else {
      w.dir = FreshRunFolder(runs_parent, default_base);
      w.default_name = true;
    }
    std::error_code ec;
    w.created = !fs::exists(w.dir, ec);
    const bool continuing = resumed.has_value() && SameFolder(resumed->dir, w.dir);
    if (!continuing) {
      RunFolderContents contents = InspectRunFolder(w.dir);
      if (contents.holds_run()) {
        if (!c.overwrite_output_dir()) {
          return absl::FailedPreconditionError(absl::StrCat(
              w.dir, " holds another run's work (", contents.Describe(),
              "): --resume continues that run, --overwrite_output_dir replaces it, "
              "--run_name or --checkpoint_dir chooses another folder"));
        }
        w.replaced = std::move(contents);
      }
    }
    auto lock = RunFolderLock::Acquire(w.dir);
    if (lock.ok()) {
      w.lock = std::move(*lock);
      return w;
    }
    if (!w.default_name || attempt >= 3) return lock.status();
  }
}

void ReleaseWriteFolder(WriteFolder* w) {
  if (w == nullptr) return;
  w->lock.reset();
  if (!w->created || w->dir.empty()) return;
  std::error_code ec;
  if (fs::is_empty(w->dir, ec) && !ec) fs::remove(w->dir, ec);
}

}  // namespace mnt::trainer

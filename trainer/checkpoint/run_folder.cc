#include "trainer/checkpoint/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/config/user_path.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

std::string Absolute(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  return (ec ? fs::path(path) : abs).lexically_normal().string();
}

// "<parent>/<base>" for n == 1, else "<parent>/<base>-run<n>".
std::string NumberedFolder(const std::string& parent, const std::string& base, int n) {
  return n == 1 ? absl::StrCat(parent, "/", base) : absl::StrCat(parent, "/", base, "-run", n);
}

// The step of checkpoint-<step> that `latest` is the same file as; -1 when
// none is (a copy on a filesystem without hard links, or pruned).
int64_t LatestStep(const std::string& dir) {
  std::error_code ec;
  const fs::path latest = LatestCheckpointPath(dir);
  if (!fs::exists(latest, ec)) return -1;
  for (const auto& [step, path] : ListStepCheckpoints(dir)) {
    if (fs::equivalent(latest, path, ec)) return step;
  }
  return -1;
}

}  // namespace

absl::StatusOr<RunFolder> OpenRunFolder(const std::string& typed, const std::string& flag) {
  const std::string path = ExpandUserPath(typed);
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " is empty"));
  std::error_code ec;
  RunFolder f;
  if (fs::is_directory(path, ec)) {
    f.dir = Absolute(path);
    f.checkpoint = LatestCheckpointPath(f.dir);
    if (!fs::exists(f.checkpoint, ec)) {
      const RunFolderContents c = InspectRunFolder(f.dir);
      return absl::NotFoundError(absl::StrCat(
          flag, "=", typed, " is a folder without a 'latest' checkpoint",
          c.holds_run() ? absl::StrCat(" (it holds ", c.Describe(), ")") : std::string(
                              " (not a run folder: a run saves checkpoint-<step> and latest)")));
    }
  } else if (fs::exists(path, ec)) {
    f.checkpoint = Absolute(path);
    f.dir = fs::path(f.checkpoint).parent_path().string();
  } else {
    return absl::NotFoundError(absl::StrCat(flag, "=", typed, ": no such run folder or checkpoint",
                                            typed != path ? absl::StrCat(" (", path, ")") : ""));
  }
  const std::string config = absl::StrCat(f.dir, "/", kRunConfigFileName);
  if (fs::is_regular_file(config, ec)) f.config_path = config;
  const std::string tokenizer = absl::StrCat(f.dir, "/", kTokenizerFileName);
  if (fs::is_regular_file(tokenizer, ec)) f.tokenizer_model = tokenizer;
  return f;
}

absl::StatusOr<TrainConfig> ReadRunConfig(const RunFolder& folder) {
  if (folder.config_path.empty()) {
    return absl::NotFoundError(
        absl::StrCat(folder.dir, " has no ", kRunConfigFileName, " (the run's saved config)"));
  }
  TrainConfig config = DefaultTrainConfig();
  if (auto s = MergeTextConfigFile(folder.config_path, &config); !s.ok()) return s;
  // The folder may have moved since the run saved it: its own copy of the
  // tokenizer is the one that goes with these checkpoints.
  if (!folder.tokenizer_model.empty()) {
    config.mutable_data()->set_tokenizer_model(folder.tokenizer_model);
  }
  return config;
}

std::string RunFolderContents::Describe() const {
  std::vector<std::string> parts;
  int64_t steps = 0;
  for (const std::string& name : run_files) {
    if (absl::StartsWith(name, "checkpoint-")) ++steps;
  }
  if (latest_step >= 0) parts.push_back(absl::StrCat("latest = step ", latest_step));
  if (steps > 0) parts.push_back(absl::StrCat(steps, " checkpoint-<step> file", steps == 1 ? "" : "s"));
  for (const std::string& name : run_files) {
    if (!absl::StartsWith(name, "checkpoint-") && (name != "latest" || latest_step < 0)) {
      parts.push_back(name);
    }
  }
  return absl::StrJoin(parts, ", ");
}

RunFolderContents InspectRunFolder(const std::string& dir) {
  RunFolderContents c;
  std::error_code ec;
  c.exists = fs::is_directory(dir, ec);
  if (!c.exists) return c;
  for (const auto& [step, path] : ListStepCheckpoints(dir)) {
    c.run_files.push_back(fs::path(path).filename().string());
  }
  for (const std::string& path : {LatestCheckpointPath(dir), BestCheckpointPath(dir),
                                  absl::StrCat(dir, "/", kRunConfigFileName)}) {
    if (fs::exists(path, ec)) c.run_files.push_back(fs::path(path).filename().string());
  }
  std::sort(c.run_files.begin(), c.run_files.end());
  c.latest_step = LatestStep(dir);
  return c;
}

std::string FreshRunFolder(const std::string& parent, const std::string& base) {
  for (int n = 1;; ++n) {
    const std::string dir = NumberedFolder(parent, base, n);
    if (!InspectRunFolder(dir).holds_run() && !RunFolderLocked(dir)) return dir;
  }
}

std::string NewestRunFolder(const std::string& parent, const std::string& base) {
  std::string newest;
  std::error_code ec;
  // Numbers may have gaps (a folder removed by hand): scan what is there.
  int highest = 0;
  if (fs::exists(LatestCheckpointPath(NumberedFolder(parent, base, 1)), ec)) highest = 1;
  const std::string prefix = base + "-run";
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string filename = it->path().filename().string();
    absl::string_view name = filename;
    int n = 0;
    if (!absl::ConsumePrefix(&name, prefix) || !absl::SimpleAtoi(name, &n) || n < 2) continue;
    if (absl::StrCat(n) != name) continue;  // "-run02" is not ours
    if (n > highest && fs::exists(LatestCheckpointPath(it->path().string()), ec)) highest = n;
  }
  return highest == 0 ? "" : NumberedFolder(parent, base, highest);
}

absl::StatusOr<std::unique_ptr<RunFolderLock>> RunFolderLock::Acquire(const std::string& dir) {
  if (auto s = MakeDirectories(dir); !s.ok()) return s;
  const std::string path = absl::StrCat(dir, "/", kRunFolderLockName);
  // The holder removes the file when it ends, so a lock taken on a file that
  // has just been removed is no lock: take it again on the file now there.
  for (int attempt = 0;; ++attempt) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      std::string holder;
      ReadWholeFile(path, &holder, 64).IgnoreError();
      close(fd);
      if (err != EWOULDBLOCK) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot lock ", path, ": ", std::strerror(err)));
      }
      absl::StripAsciiWhitespace(&holder);
      return absl::FailedPreconditionError(absl::StrCat(
          "another run", holder.empty() ? "" : absl::StrCat(" (pid ", holder, ")"),
          " is writing ", dir, ": wait for it to end, or choose another folder (--run_name or "
          "--checkpoint_dir)"));
    }
    struct stat held{}, named{};
    if (fstat(fd, &held) != 0 || stat(path.c_str(), &named) != 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
      close(fd);
      if (attempt < 10) continue;
      return absl::FailedPreconditionError(absl::StrCat("cannot lock ", path,
                                                        ": it keeps being replaced"));
    }
    // Who holds it, for the next run's message; the lock itself is the flock.
    const std::string pid = absl::StrCat(getpid(), "\n");
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // Only the message would lack the pid.
    }
    return std::unique_ptr<RunFolderLock>(new RunFolderLock(fd, path));
  }
}

RunFolderLock::~RunFolderLock() {
  // Removed while still held, so no other run can lock this file meanwhile;
  // a run killed here leaves the file, unlocked, which is harmless.
  unlink(path_.c_str());
  close(fd_);
}

bool RunFolderLocked(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kRunFolderLockName);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // flock locks belong to the open file description: this new one conflicts
  // with any holder's, this process's own included.
  const bool locked = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return locked;
}

absl::StatusOr<std::vector<std::string>> ClearRunFolder(const std::string& dir) {
  std::vector<std::string> names = InspectRunFolder(dir).run_files;
  std::error_code ec;
  // What else a run keeps in its folder: its tokenizer, and the logs
  // --report_to puts there (a new run's curves must not mix with them).
  for (const char* name : {kTokenizerFileName, "metrics.jsonl", "metrics.jsonl.1", "tensorboard"}) {
    if (fs::exists(absl::StrCat(dir, "/", name), ec)) names.push_back(name);
  }
  std::vector<std::string> removed;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, "/", name);
    fs::remove_all(path, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", ec.message()));
    }
    removed.push_back(name);
  }
  return removed;
}

}  // namespace mnt::trainer

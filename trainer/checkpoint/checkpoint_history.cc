#include "trainer/checkpoint/checkpoint_history.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt {
namespace trainer {
namespace {

namespace fs = std::filesystem;
constexpr char kPrefix[] = "checkpoint-";

absl::Status Error(const std::string& what, const std::string& path, const std::error_code& ec) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", ec.message()));
}

// Same bytes as `from` at `to` through a temporary name, then rename: a hard
// link where the filesystem has them, else a copy.
absl::Status ReplaceWithSameFile(const std::string& from, const std::string& to) {
  const std::string tmp = absl::StrCat(to, ".tmp.", getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(from, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec) return Error("cannot copy checkpoint to", tmp, ec);
  }
  fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Error("cannot replace", to, ec);
  }
  // The rename is durable once the directory is.
  const int dir_fd = open(fs::path(to).parent_path().c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace

std::string StepCheckpointPath(const std::string& dir, int64_t step) {
  return absl::StrCat(dir, "/", kPrefix, step);
}

std::string BestCheckpointPath(const std::string& dir) { return absl::StrCat(dir, "/best"); }

std::vector<std::pair<int64_t, std::string>> ListStepCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    absl::string_view digits = name;
    if (!absl::ConsumePrefix(&digits, kPrefix) || digits.empty()) continue;
    if (!std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit)) continue;
    int64_t step = 0;
    if (!absl::SimpleAtoi(digits, &step)) continue;
    if (!it->is_regular_file(ec)) continue;
    found.emplace_back(step, it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

absl::Status PublishCheckpoint(const std::string& dir, const std::string& step_file,
                               int64_t keep, std::vector<std::string>* removed) {
  if (absl::Status s = ReplaceWithSameFile(step_file, LatestCheckpointPath(dir)); !s.ok()) {
    return s;
  }
  if (keep <= 0) return absl::OkStatus();
  std::vector<std::pair<int64_t, std::string>> steps = ListStepCheckpoints(dir);
  const std::string newest = fs::path(step_file).lexically_normal().string();
  const std::string best = BestCheckpointPath(dir);
  // The oldest go first; the newest and the best stay, counted among `keep`.
  size_t left = steps.size();
  for (size_t i = 0; i < steps.size() && left > static_cast<size_t>(keep); ++i) {
    if (fs::path(steps[i].second).lexically_normal().string() == newest) continue;
    std::error_code not_linked;  // no `best` yet, or no hard links
    if (fs::equivalent(steps[i].second, best, not_linked)) continue;
    std::error_code ec;
    fs::remove(steps[i].second, ec);
    if (ec) return Error("cannot remove old checkpoint", steps[i].second, ec);
    if (removed != nullptr) removed->push_back(steps[i].second);
    --left;
  }
  return absl::OkStatus();
}

absl::Status PublishBestCheckpoint(const std::string& dir, const std::string& step_file) {
  return ReplaceWithSameFile(step_file, BestCheckpointPath(dir));
}

absl::StatusOr<std::string> ResolveCheckpointPath(const std::string& path,
                                                  const std::string& flag) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const std::string latest = LatestCheckpointPath(path);
    if (fs::exists(latest, ec)) return latest;
    return absl::NotFoundError(
        absl::StrCat(flag, "=", path, " is a directory without a 'latest' checkpoint"));
  }
  if (fs::exists(path, ec)) return path;
  return absl::NotFoundError(absl::StrCat(flag, "=", path, ": no such checkpoint"));
}

}  // namespace trainer
}  // namespace mnt

#include "trainer/loader/search_path.h"

#include <cstdlib>
#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "trainer/loader/plugin_names.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

// Splits a ':'-separated list, dropping empty entries.
std::vector<std::string> SplitPath(const std::string& list) {
  return absl::StrSplit(list, ':', absl::SkipEmpty());
}

// The runfiles tree of this binary: RUNFILES_DIR, TEST_SRCDIR, then
// <argv0>.runfiles and <executable>.runfiles. Empty when there is none.
std::string FindRunfilesDir(const std::string& argv0,
                            const std::string& executable) {
  std::vector<std::string> candidates;
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    const char* value = std::getenv(var);
    if (value != nullptr && *value != '\0') candidates.push_back(value);
  }
  if (!argv0.empty()) candidates.push_back(argv0 + ".runfiles");
  if (!executable.empty()) candidates.push_back(executable + ".runfiles");
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return dir;
  }
  return "";
}

// Directories under `root` holding mnt_*.so files, sorted. Runfiles are
// directories of symlinks; directory symlinks are not followed.
std::vector<std::string> PluginDirsUnder(const std::string& root) {
  std::set<std::string> dirs;
  std::error_code ec;
  fs::recursive_directory_iterator it(
      root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code file_ec;
    if (IsPluginFileName(p.filename().string()) &&
        fs::is_regular_file(p, file_ec)) {  // follows symlinks (runfiles)
      dirs.insert(p.parent_path().string());
    }
  }
  return {dirs.begin(), dirs.end()};
}

std::string ExecutablePath() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.string();
}

}  // namespace

std::vector<std::string> PluginSearchPath(const std::string& plugin_path_flag,
                                          const std::string& argv0) {
  std::vector<std::string> dirs = SplitPath(plugin_path_flag);
  if (const char* env = std::getenv("MANTISSA_PLUGIN_PATH")) {
    for (std::string& d : SplitPath(env)) dirs.push_back(std::move(d));
  }
  const std::string executable = ExecutablePath();
  const std::string runfiles = FindRunfilesDir(argv0, executable);
  if (!runfiles.empty()) {
    const char* workspace = std::getenv("TEST_WORKSPACE");
    const std::string root = absl::StrCat(
        runfiles, "/",
        workspace != nullptr && *workspace != '\0' ? workspace : "mantissa");
    for (std::string& d : PluginDirsUnder(root)) dirs.push_back(std::move(d));
  }
  std::string exe_dir;
  if (!executable.empty()) {
    exe_dir = fs::path(executable).parent_path().string();
  } else if (argv0.find('/') != std::string::npos) {
    exe_dir = fs::path(argv0).parent_path().string();
  }
  if (!exe_dir.empty()) {
    dirs.push_back(exe_dir);
    // An installed layout (the SDK bundle): <prefix>/bin/train beside
    // <prefix>/lib/mantissa/plugins/.
    std::error_code ec;
    const fs::path installed =
        fs::path(exe_dir).parent_path() / "lib" / "mantissa" / "plugins";
    if (fs::is_directory(installed, ec)) dirs.push_back(installed.string());
  }
  // Keep the first occurrence of each directory.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (std::string& d : dirs) {
    if (seen.insert(d).second) unique.push_back(std::move(d));
  }
  return unique;
}

}  // namespace mnt::trainer

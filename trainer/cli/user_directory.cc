#include "trainer/cli/user_directory.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace mnt::trainer {

absl::Status EnterUserDirectory(const char* argv0, std::string* absolute_argv0) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::absolute(argv0, ec);
  *absolute_argv0 = ec ? std::string(argv0) : abs.string();
  const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (wd == nullptr || *wd == '\0') return absl::OkStatus();
  if (std::getenv("RUNFILES_DIR") == nullptr) {
    const fs::path runfiles = *absolute_argv0 + ".runfiles";
    if (fs::is_directory(runfiles, ec)) {
      setenv("RUNFILES_DIR", runfiles.c_str(), /*overwrite=*/0);
    } else {
      // bazel run starts in <binary>.runfiles/<workspace>.
      const fs::path parent = fs::current_path(ec).parent_path();
      if (!ec && parent.extension() == ".runfiles") setenv("RUNFILES_DIR", parent.c_str(), 0);
    }
  }
  if (chdir(wd) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot enter the directory the command was started in (", wd,
                     ", BUILD_WORKING_DIRECTORY): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer

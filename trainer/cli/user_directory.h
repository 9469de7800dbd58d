// Paths on a command line are relative to where the user typed it, also
// under `tools/bazel run`, which starts a binary inside its runfiles tree
// and names the user's directory in BUILD_WORKING_DIRECTORY.
#ifndef MANTISSA_TRAINER_CLI_USER_DIRECTORY_H_
#define MANTISSA_TRAINER_CLI_USER_DIRECTORY_H_

#include <string>

#include "absl/status/status.h"

namespace mnt::trainer {

// Under bazel run (BUILD_WORKING_DIRECTORY set): pins the runfiles tree
// (RUNFILES_DIR, absolute, unless already set) so plugins and bundled data
// are still found, then changes to the user's directory. *argv0 is argv[0]
// made absolute first (the runfiles are found next to it). Elsewhere only
// *argv0 is set. An error names a directory that cannot be entered.
absl::Status EnterUserDirectory(const char* argv0, std::string* absolute_argv0);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_USER_DIRECTORY_H_

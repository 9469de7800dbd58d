// The train CLI's command-line manners for the other tools (sample,
// export_llmc, import_llmc, tokenize): a real usage line for --help,
// relative paths meaning the user's directory under `tools/bazel run`, and
// an unknown or mistyped flag as one "<tool>: error: ..." line with a
// did-you-mean instead of absl's own messages.
#ifndef MANTISSA_TRAINER_CLI_TOOL_COMMAND_LINE_H_
#define MANTISSA_TRAINER_CLI_TOOL_COMMAND_LINE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace mnt::trainer {

// "<tool>: error: <message>" as one line on stderr (newlines in the message
// become spaces); returns 1, the exit code.
int ToolError(const char* tool, absl::string_view message);

// Enters the user's directory (user_directory.h), sets `usage` as the
// program's usage message, checks the flags and parses them with absl.
// Returns -1 to go on, else the exit code (1 after one error line on
// stderr). argv[0] is made absolute, kept in *argv0 (which must outlive
// argv's use).
int ParseToolCommandLine(int argc, char** argv, const char* tool, const char* usage,
                         std::string* argv0);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_TOOL_COMMAND_LINE_H_

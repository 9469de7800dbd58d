// Checks argv before absl parses it, so a mistyped flag or a bad value ends
// the run with the project's one line ("mantissa: error: ...") and a
// suggestion, instead of absl's own "ERROR: Unknown command line flag".
#ifndef MANTISSA_TRAINER_CONFIG_COMMAND_LINE_CHECK_H_
#define MANTISSA_TRAINER_CONFIG_COMMAND_LINE_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace mnt {
namespace trainer {

// OK when every flag in argv[1..] names a defined flag and every value given
// parses as that flag's type. An unknown name gets "did you mean --x?" when a
// defined flag is a few edits away. Arguments after "--" are not flags; a
// bare argument is left to the caller. Flag values are left as they were.
absl::Status CheckCommandLine(int argc, char* const argv[]);

// The defined flag nearest to `name` by edit distance, if it is close enough
// to be a typo of it; "" otherwise. `names` are the candidates.
std::string NearestFlagName(absl::string_view name, const std::vector<std::string>& names);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_CONFIG_COMMAND_LINE_CHECK_H_

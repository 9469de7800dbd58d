#include "trainer/core/freeze_patterns.h"

#include <fnmatch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mnt::trainer {

absl::StatusOr<std::vector<bool>> MatchFrozen(const std::vector<std::string>& names,
                                              const std::string& patterns) {
  std::vector<bool> frozen(names.size(), false);
  for (absl::string_view part : absl::StrSplit(patterns, ',', absl::SkipWhitespace())) {
    const std::string pattern(part);
    const bool negated = !pattern.empty() && pattern[0] == '!';
    const std::string glob = negated ? pattern.substr(1) : pattern;
    bool matched = false;
    for (size_t i = 0; i < names.size(); ++i) {
      if ((fnmatch(glob.c_str(), names[i].c_str(), 0) == 0) != negated) {
        frozen[i] = matched = true;
      }
    }
    if (!matched) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--freeze: '", pattern, "' matches no parameter of the model (its parameters: ",
          absl::StrJoin(names, ", "), ")"));
    }
  }
  return frozen;
}

}  // namespace mnt::trainer

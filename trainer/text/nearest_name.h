// "did you mean ...?": the candidate a mistyped name most likely meant, for
// flags (--precison) and plugin names (--model=gtp2) alike.
#ifndef MANTISSA_TRAINER_TEXT_NEAREST_NAME_H_
#define MANTISSA_TRAINER_TEXT_NEAREST_NAME_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace mnt::trainer {

// The candidate nearest to `name` by edit distance, letter case ignored
// (GPT2 is gpt2), when it is close enough to be a typo of it (at most a third
// of the name, and at least 2 edits allowed); "" otherwise. Ties go to the
// first candidate.
std::string NearestName(absl::string_view name, const std::vector<std::string>& candidates);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_TEXT_NEAREST_NAME_H_

// --freeze=PATTERN,...: which parameters train no further. A pattern is a
// shell glob over parameter names (fnmatch: `*`, `?`, `[...]`), as
// Hugging Face's requires_grad_(False) loops over named_parameters() pick
// them; every pattern must match some parameter. A pattern `!GLOB` matches
// every name GLOB does not (--lora's `!*.lora_[AB]`: all but the adapters).
#ifndef MANTISSA_TRAINER_CORE_FREEZE_PATTERNS_H_
#define MANTISSA_TRAINER_CORE_FREEZE_PATTERNS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mnt::trainer {

// For each of `names`, whether a pattern of the comma-separated `patterns`
// matches it ("" freezes none). A pattern matching no name is an error
// listing the names.
absl::StatusOr<std::vector<bool>> MatchFrozen(const std::vector<std::string>& names,
                                              const std::string& patterns);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_FREEZE_PATTERNS_H_

// Which fields a text-format TrainConfig names. proto3 keeps no presence for
// scalars, so `steps: 0` and no `steps` at all parse to the same message;
// the parser's location tree still tells them apart.
#ifndef MANTISSA_TRAINER_CONFIG_CONFIG_FIELDS_H_
#define MANTISSA_TRAINER_CONFIG_CONFIG_FIELDS_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace mnt::trainer {

// Dotted paths of every field `text` sets, messages included: "steps",
// "data", "data.dataset", "optimizer.lr". Errors as MergeTextConfig's.
absl::StatusOr<std::set<std::string>> FieldPathsInTextConfig(const std::string& text);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CONFIG_CONFIG_FIELDS_H_

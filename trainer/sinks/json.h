// The little JSON the metrics sinks write: escaped strings and numbers that
// round-trip (non-finite numbers become the strings "nan", "inf", "-inf",
// since JSON has no literal for them).
#ifndef MANTISSA_TRAINER_SINKS_JSON_H_
#define MANTISSA_TRAINER_SINKS_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace mnt::trainer {

// "..." with quotes, backslashes and control characters escaped.
std::string JsonString(absl::string_view s);

// Reads back as the same double (every fp32 loss bit for bit), in as few
// digits as that takes (0.1 prints as 0.1).
std::string JsonNumber(double v);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_SINKS_JSON_H_

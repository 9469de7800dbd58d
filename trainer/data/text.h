// Byte-level text: every byte of the file is one token (vocab 256).
#ifndef MANTISSA_TRAINER_DATA_TEXT_H_
#define MANTISSA_TRAINER_DATA_TEXT_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace mnt {
namespace trainer {

inline constexpr int64_t kByteVocab = 256;

// Missing or empty file: one line naming it.
absl::StatusOr<TokenData> LoadTextBytes(const std::string& path);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_TEXT_H_

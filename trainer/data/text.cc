#include "trainer/data/text.h"

#include "absl/strings/str_cat.h"
#include "trainer/checkpoint/atomic_file.h"

namespace mnt {
namespace trainer {

absl::StatusOr<TokenData> LoadTextBytes(const std::string& path) {
  std::string bytes;
  // Each byte becomes an int32 token: 1 GiB of text is 4 GiB of tokens.
  constexpr int64_t kMaxTextBytes = int64_t{1} << 30;
  absl::Status s = ReadWholeFile(path, &bytes, kMaxTextBytes);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("text dataset: ", s.message()));
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("text dataset ", path, " is empty"));
  }
  TokenData data;
  data.vocab = kByteVocab;
  data.tokens.resize(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    data.tokens[i] = static_cast<unsigned char>(bytes[i]);
  }
  return data;
}

}  // namespace trainer
}  // namespace mnt

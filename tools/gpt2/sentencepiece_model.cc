#include "tools/gpt2/sentencepiece_model.h"

#include "absl/strings/str_cat.h"
#include "trainer/io/atomic_file.h"

namespace mnt::gpt2 {

absl::StatusOr<spm::ModelProto> ReadSentencePieceModel(const std::string& path) {
  // Real models are a few MB at most (a 256k vocabulary is about 5 MB).
  constexpr int64_t kMaxModelBytes = int64_t{256} << 20;
  std::string bytes;
  if (auto s = trainer::ReadWholeFile(path, &bytes, kMaxModelBytes); !s.ok()) return s;
  spm::ModelProto model;
  if (!model.ParseFromString(bytes) || model.pieces_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a SentencePiece model (no pieces in it)"));
  }
  return model;
}

}  // namespace mnt::gpt2

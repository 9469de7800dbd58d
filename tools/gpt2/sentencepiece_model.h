// A SentencePiece model file (tokenizer.model) read as data: its pieces,
// their scores and kinds, and the settings that say how text becomes
// pieces. For the vocabulary size and export_hf's tokenizer.json; encoding
// and decoding stay with SentencePiece itself (trainer/data/
// sentencepiece_text.h).
#ifndef MANTISSA_TOOLS_GPT2_SENTENCEPIECE_MODEL_H_
#define MANTISSA_TOOLS_GPT2_SENTENCEPIECE_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "tools/gpt2/sentencepiece_model.pb.h"

namespace mnt::gpt2 {

// The model at `path`. One line naming the file when it cannot be read,
// does not parse, or has no pieces.
absl::StatusOr<spm::ModelProto> ReadSentencePieceModel(const std::string& path);

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_SENTENCEPIECE_MODEL_H_

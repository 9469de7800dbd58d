// Text through a SentencePiece subword model (--dataset=text
// --tokenizer=sentencepiece): trained on the text itself (BPE or unigram,
// the vocabulary size asked for, byte fallback so every byte sequence
// encodes and decodes back exactly), or a given .model file. A trained
// model is kept under <cache>/tokenizers/, named by a hash of the text and
// the options, so the same command reuses it.
#ifndef MANTISSA_TRAINER_DATA_SENTENCEPIECE_TEXT_H_
#define MANTISSA_TRAINER_DATA_SENTENCEPIECE_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace mnt::trainer {

struct SentencePieceOptions {
  std::string type = "bpe";  // bpe | unigram
  int64_t vocab = 1024;
  std::string model;         // a .model file to use; "" = train one
  std::string cache_dir;     // where trained models are kept
};

struct SentencePieceText {
  TokenData tokens;          // vocab = the model's piece count
  std::string model_path;    // the model used (trained or given)
  bool trained = false;      // trained by this call (else reused or given)
  // Names the tokens in the converted-data cache (<cache>/tokenizers/):
  // a trained model's own name (<type>-<vocab>-<hash of the text and
  // options>), for a given model model-<vocab>-<hash of it and the text>.
  std::string cache_key;
};

// Encodes the text of `text_path`: one file, or several joined (text.h's
// TextFiles and ReadTextFiles; a model is trained on the joined text, and
// its name hashes every file's bytes). One line naming the file or the
// option on any failure (missing file, vocabulary too large for the text, a
// model file that does not parse).
absl::StatusOr<SentencePieceText> TokenizeWithSentencePiece(const std::string& text_path,
                                                            const SentencePieceOptions& options);

// Decoding and encoding with a model file (the sample tool's side).
absl::StatusOr<std::string> DecodeWithSentencePiece(const std::string& model_path,
                                                    const std::vector<int32_t>& ids);
absl::StatusOr<std::vector<int32_t>> EncodeWithSentencePiece(const std::string& model_path,
                                                             const std::string& text);
// The model's vocabulary size (its piece count).
absl::StatusOr<int64_t> SentencePieceVocab(const std::string& model_path);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_DATA_SENTENCEPIECE_TEXT_H_

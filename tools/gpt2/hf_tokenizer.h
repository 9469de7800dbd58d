// The tokenizer files Hugging Face loads (AutoTokenizer.from_pretrained,
// tokenizers.Tokenizer.from_file) for a Mantissa run's tokenizer, written by
// export_hf beside model.safetensors:
//
//   byte-level runs (vocabulary 256, every byte a token, id = byte value):
//     GPT-2's byte-level BPE with the 256 byte symbols and no merges:
//     vocab.json, merges.txt, tokenizer.json, tokenizer_config.json. There is
//     no <|endoftext|> (GPT-2's id 50256 has no row in a 256-token model, and
//     the training text has no such marker): the tokenizer defines no
//     special tokens at all (bos, eos, unk, pad null), so every text maps to
//     its bytes, "<|endoftext|>" included;
//   SentencePiece runs: tokenizer.json giving exactly SentencePiece's ids
//     (BPE: merges in the order of the merged pieces' scores; Unigram: the
//     pieces' scores; byte fallback as the model has it; the dummy-prefix
//     space), and tokenizer_config.json naming <s>, </s>, <unk> with
//     split_special_tokens, so that text spelling "<s>" is text, as
//     SentencePiece treats it.
#ifndef MANTISSA_TOOLS_GPT2_HF_TOKENIZER_H_
#define MANTISSA_TOOLS_GPT2_HF_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/gpt2/sentencepiece_model.pb.h"

namespace mnt::gpt2 {

struct HfTokenizerFile {
  std::string name;      // e.g. "tokenizer.json"
  std::string contents;
};

// GPT-2's printable stand-in for `byte` in its byte-level vocabulary (the
// byte itself for printable Latin-1, else U+0100 onwards in byte order), as
// UTF-8.
std::string Gpt2ByteSymbol(unsigned char byte);

// The byte-level tokenizer; `max_length`: the model's context
// (tokenizer_config.json's model_max_length).
std::vector<HfTokenizerFile> ByteLevelTokenizerFiles(int64_t max_length);

// The SentencePiece model's tokenizer.json and tokenizer_config.json.
// FailedPrecondition, one line saying why, for a model whose text handling
// is not translated here (a normalization rule other than identity,
// removing extra whitespace, whitespace as a suffix, user-defined pieces, a
// word or char model): Mantissa trains none of those.
absl::StatusOr<std::vector<HfTokenizerFile>> SentencePieceTokenizerFiles(
    const spm::ModelProto& model, int64_t max_length);

// What a Hugging Face folder's tokenizer is, for import_hf.
struct HfFolderTokenizer {
  enum class Kind {
    kNone,           // no tokenizer files
    kSentencePiece,  // tokenizer.model
    kByteLevel,      // GPT-2's 256 byte symbols, id = byte value, no merges
    kOther,          // anything else (GPT-2's own BPE, WordPiece...)
  };
  Kind kind = Kind::kNone;
  std::string file;  // the file that says so
  spm::ModelProto model;  // kSentencePiece
};
// One line when a tokenizer file is there but does not read.
absl::StatusOr<HfFolderTokenizer> InspectHfFolderTokenizer(const std::string& dir);

// Every name the two functions above write, and tokenizer.model: an export
// removes those it does not write this time (an earlier export's, of
// another run, would otherwise describe the wrong tokenizer).
std::vector<std::string> HfTokenizerFileNames();

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_HF_TOKENIZER_H_

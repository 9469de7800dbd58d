#include "trainer/data/sentencepiece_text.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/checkpoint/atomic_file.h"
#include "trainer/data/sentencepiece_bridge.h"

namespace mnt::trainer {
namespace {

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string text((std::istreambuf_iterator<char>(f)), {});
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " is empty"));
  return text;
}

// A model that does not load: the one line names the file.
absl::Status ModelError(const std::string& model_path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--tokenizer_model=", model_path, ": not a SentencePiece model (", why, ")"));
}

}  // namespace

absl::StatusOr<SentencePieceText> TokenizeWithSentencePiece(const std::string& text_path,
                                                            const SentencePieceOptions& o) {
  if (o.type != "bpe" && o.type != "unigram") {
    return absl::InvalidArgumentError(
        absl::StrCat("--tokenizer_type=", o.type, " is not bpe or unigram"));
  }
  auto text = ReadText(text_path);
  if (!text.ok()) return text.status();
  SentencePieceText out;
  out.model_path = o.model;
  if (out.model_path.empty()) {
    // Same text, type and size: the same file, trained once.
    const uint64_t key = absl::HashOf(*text, o.type, o.vocab);
    const std::string dir = absl::StrCat(o.cache_dir, "/tokenizers");
    const std::string prefix = absl::StrFormat("%s/%s-%d-%016x", dir, o.type, o.vocab, key);
    out.model_path = prefix + ".model";
    if (!std::filesystem::exists(out.model_path)) {
      if (auto s = MakeDirectories(dir); !s.ok()) return s;
      // Trained into a temp prefix, then renamed: a killed run leaves no
      // half model under the name later runs reuse.
      const std::string tmp = absl::StrCat(prefix, ".tmp");
      const std::string args = absl::StrCat(
          "--input=", text_path, " --model_prefix=", tmp, " --model_type=", o.type,
          " --vocab_size=", o.vocab,
          " --character_coverage=1.0 --byte_fallback=true --split_digits=true"
          " --max_sentence_length=1000000 --num_threads=2 --minloglevel=2"
          " --normalization_rule_name=identity --remove_extra_whitespaces=false");
      if (const std::string e = sp::Train(args); !e.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            text_path, ": SentencePiece cannot train a ", o.type, " model of ", o.vocab,
            " pieces on it (", e, "); try a smaller --vocab_size"));
      }
      std::error_code ec;
      std::filesystem::rename(tmp + ".model", out.model_path, ec);
      std::filesystem::remove(tmp + ".vocab", ec);
      if (ec) return absl::InternalError(absl::StrCat("cannot keep ", out.model_path));
      out.trained = true;
    }
  }
  std::vector<int> ids;
  int pieces = 0;
  if (const std::string e = sp::Encode(out.model_path, *text, &ids, &pieces); !e.empty()) {
    return pieces == 0 ? ModelError(out.model_path, e)
                       : absl::InternalError(absl::StrCat(
                             text_path, ": SentencePiece encoding failed (", e, ")"));
  }
  out.tokens.tokens.assign(ids.begin(), ids.end());
  out.tokens.vocab = pieces;
  return out;
}

absl::StatusOr<std::string> DecodeWithSentencePiece(const std::string& model_path,
                                                    const std::vector<int32_t>& ids) {
  std::string text;
  const std::vector<int> as_int(ids.begin(), ids.end());
  if (const std::string e = sp::Decode(model_path, as_int, &text); !e.empty()) {
    return ModelError(model_path, e);
  }
  return text;
}

absl::StatusOr<std::vector<int32_t>> EncodeWithSentencePiece(const std::string& model_path,
                                                             const std::string& text) {
  std::vector<int> ids;
  int pieces = 0;
  if (const std::string e = sp::Encode(model_path, text, &ids, &pieces); !e.empty()) {
    return ModelError(model_path, e);
  }
  return std::vector<int32_t>(ids.begin(), ids.end());
}

}  // namespace mnt::trainer

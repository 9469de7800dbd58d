#include "tools/gpt2/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tools/gpt2/sentencepiece_model.h"
#include "trainer/io/atomic_file.h"
#include "trainer/sinks/json.h"

namespace mnt::gpt2 {
namespace {

using trainer::JsonNumber;
using trainer::JsonString;
using Piece = spm::ModelProto::SentencePiece;

// SentencePiece's stand-in for a space (U+2581, "▁").
constexpr char kSpaceSymbol[] = "\xe2\x96\x81";

// Code points below U+10000 (the byte symbols go up to U+0143).
std::string Utf8(uint32_t code_point) {
  std::string s;
  if (code_point < 0x80) {
    s.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    s.push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    s.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else {
    s.push_back(static_cast<char>(0xe0 | (code_point >> 12)));
    s.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    s.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  }
  return s;
}

bool PrintableLatin1(unsigned b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

// tokenizer_config.json's lines every export shares: the context, and no
// clean-up on decode (transformers' would turn "a ." into "a.", which is
// not the text the ids are).
std::string CommonConfig(int64_t max_length) {
  return absl::StrCat("  \"clean_up_tokenization_spaces\": false,\n  \"model_max_length\": ",
                      max_length, "\n");
}

std::string TokenOrNull(const spm::ModelProto& m, int32_t id) {
  return id >= 0 && id < m.pieces_size() ? JsonString(m.pieces(id).piece()) : "null";
}

// Why tokenizer.json cannot say how this model turns text into pieces; ""
// when it can.
std::string Untranslated(const spm::ModelProto& m) {
  const spm::TrainerSpec& t = m.trainer_spec();
  const spm::NormalizerSpec& n = m.normalizer_spec();
  if (t.model_type() != spm::TrainerSpec::BPE && t.model_type() != spm::TrainerSpec::UNIGRAM) {
    return absl::StrCat("it is a ", spm::TrainerSpec::ModelType_Name(t.model_type()),
                        " model (BPE and UNIGRAM are translated)");
  }
  if (!n.precompiled_charsmap().empty() || (!n.name().empty() && n.name() != "identity")) {
    return absl::StrCat("it normalizes text (rule '", n.name(), "'); Mantissa trains with "
                        "--normalization_rule_name=identity");
  }
  if (n.remove_extra_whitespaces()) return "it removes extra whitespace";
  if (!n.escape_whitespaces()) return "it does not turn spaces into \xe2\x96\x81";
  if (t.treat_whitespace_as_suffix()) return "it puts \xe2\x96\x81 after words";
  if (t.unk_id() < 0 || t.unk_id() >= m.pieces_size() ||
      m.pieces(t.unk_id()).type() != Piece::UNKNOWN) {
    return "its unk_id is not an unknown piece";
  }
  for (const Piece& p : m.pieces()) {
    if (p.type() == Piece::USER_DEFINED) {
      return absl::StrCat("it has user-defined pieces ('", p.piece(), "')");
    }
  }
  return "";
}

// The lengths of the UTF-8 characters' starts in `s` past the first, i.e.
// the places a piece can be split into two non-empty pieces.
std::vector<size_t> CharBoundaries(const std::string& s) {
  std::vector<size_t> at;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) at.push_back(i);
  }
  return at;
}

// SentencePiece's BPE merges, at every step, the adjacent pair whose
// concatenation is the highest-scoring normal piece (the leftmost on a
// tie). As HF merges: every split (a, b) of a normal piece into two normal
// pieces, ranked by the piece's score (then id), so the lowest rank HF
// applies first is the pair SentencePiece merges first.
std::string BpeMerges(const spm::ModelProto& m) {
  std::map<std::string, int> normal;
  for (int i = 0; i < m.pieces_size(); ++i) {
    if (m.pieces(i).type() == Piece::NORMAL) normal.emplace(m.pieces(i).piece(), i);
  }
  // (-score, merged id, left id): the order merges apply in.
  std::vector<std::tuple<float, int, int, std::string, std::string>> merges;
  for (const auto& [piece, id] : normal) {
    for (size_t k : CharBoundaries(piece)) {
      const std::string left = piece.substr(0, k), right = piece.substr(k);
      auto l = normal.find(left);
      if (l == normal.end() || normal.count(right) == 0) continue;
      merges.emplace_back(-m.pieces(id).score(), id, l->second, left, right);
    }
  }
  std::sort(merges.begin(), merges.end());
  std::string out = "[";
  for (size_t i = 0; i < merges.size(); ++i) {
    absl::StrAppend(&out, i ? ",\n      [" : "\n      [", JsonString(std::get<3>(merges[i])), ", ",
                    JsonString(std::get<4>(merges[i])), "]");
  }
  return absl::StrCat(out, merges.empty() ? "]" : "\n    ]");
}

std::string BpeModel(const spm::ModelProto& m) {
  std::string vocab = "{";
  for (int i = 0; i < m.pieces_size(); ++i) {
    absl::StrAppend(&vocab, i ? ",\n      " : "\n      ", JsonString(m.pieces(i).piece()), ": ", i);
  }
  absl::StrAppend(&vocab, "\n    }");
  return absl::StrCat(
      "{\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": ",
      JsonString(m.pieces(m.trainer_spec().unk_id()).piece()),
      ",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n"
      "    \"fuse_unk\": true,\n    \"byte_fallback\": ",
      m.trainer_spec().byte_fallback() ? "true" : "false",
      ",\n    \"ignore_merges\": false,\n    \"vocab\": ", vocab, ",\n    \"merges\": ",
      BpeMerges(m), "\n  }");
}

// SentencePiece's Unigram finds the segmentation of highest total score
// among normal pieces (an unknown character scores the lowest normal score
// minus 10). HF's Unigram has no piece kinds: every vocabulary entry can
// match text. So the unknown, control and byte pieces get a score far below
// any normal one, which keeps them out of every segmentation that normal
// pieces can spell; HF then also takes its unknown score from that floor,
// but every segmentation through an unknown character holds the same
// unknown node, so the choice among them is unchanged.
std::string UnigramModel(const spm::ModelProto& m) {
  float lowest = 0;
  for (const Piece& p : m.pieces()) {
    if (p.type() == Piece::NORMAL) lowest = std::min(lowest, p.score());
  }
  const double floor = static_cast<double>(lowest) - 1000.0;
  std::string vocab = "[";
  for (int i = 0; i < m.pieces_size(); ++i) {
    const Piece& p = m.pieces(i);
    const double score = p.type() == Piece::NORMAL ? static_cast<double>(p.score()) : floor;
    absl::StrAppend(&vocab, i ? ",\n      [" : "\n      [", JsonString(p.piece()), ", ",
                    JsonNumber(score), "]");
  }
  absl::StrAppend(&vocab, "\n    ]");
  return absl::StrCat("{\n    \"type\": \"Unigram\",\n    \"unk_id\": ", m.trainer_spec().unk_id(),
                      ",\n    \"byte_fallback\": ",
                      m.trainer_spec().byte_fallback() ? "true" : "false",
                      ",\n    \"vocab\": ", vocab, "\n  }");
}

// Whether `vocab` (a JSON object of token -> id) is the byte-level
// vocabulary: GPT-2's 256 byte symbols, each the id of its byte.
bool IsByteLevelVocab(const google::protobuf::Struct& vocab) {
  if (vocab.fields_size() != 256) return false;
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.fields().find(Gpt2ByteSymbol(static_cast<unsigned char>(b)));
    if (it == vocab.fields().end() || it->second.number_value() != b) return false;
  }
  return true;
}

absl::StatusOr<google::protobuf::Struct> ReadJsonObject(const std::string& path) {
  std::string text;
  if (auto s = trainer::ReadWholeFile(path, &text, int64_t{1} << 30); !s.ok()) return s;
  google::protobuf::Struct json;
  if (auto s = google::protobuf::util::JsonStringToMessage(text, &json); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object (",
                                                   std::string(s.message()), ")"));
  }
  return json;
}

// merges.txt without a merge: its "#version" line at most.
absl::StatusOr<bool> NoMerges(const std::string& path) {
  std::string text;
  if (auto s = trainer::ReadWholeFile(path, &text, int64_t{1} << 30); !s.ok()) return s;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && !absl::StartsWith(line, "#version")) return false;
  }
  return true;
}

}  // namespace

std::string Gpt2ByteSymbol(unsigned char byte) {
  if (PrintableLatin1(byte)) return Utf8(byte);
  uint32_t n = 0;
  for (unsigned b = 0; b < byte; ++b) n += PrintableLatin1(b) ? 0 : 1;
  return Utf8(256 + n);
}

std::vector<HfTokenizerFile> ByteLevelTokenizerFiles(int64_t max_length) {
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    absl::StrAppend(&vocab, b ? ",\n" : "\n", "  ",
                    JsonString(Gpt2ByteSymbol(static_cast<unsigned char>(b))), ": ", b);
  }
  absl::StrAppend(&vocab, "\n}");
  std::string indented;  // the vocabulary again, inside tokenizer.json's model
  for (char c : vocab) {
    indented.push_back(c);
    if (c == '\n') indented += "    ";
  }
  // No regex split: with no merges every byte is a token however the text
  // is split, and each token is its byte.
  auto byte_level = [](bool trim_offsets) {
    return absl::StrCat("{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": ",
                        trim_offsets ? "true" : "false", ", \"use_regex\": false}");
  };
  std::string tokenizer = absl::StrCat(
      "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
      "  \"added_tokens\": [],\n  \"normalizer\": null,\n  \"pre_tokenizer\": ",
      byte_level(true), ",\n  \"post_processor\": ", byte_level(false),
      ",\n  \"decoder\": ", byte_level(true),
      ",\n  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
      "    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n"
      "    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
      "    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": ",
      indented, ",\n    \"merges\": []\n  }\n}\n");
  std::string config = absl::StrCat(
      "{\n  \"tokenizer_class\": \"GPT2Tokenizer\",\n  \"add_prefix_space\": false,\n"
      "  \"bos_token\": null,\n  \"eos_token\": null,\n  \"unk_token\": null,\n"
      "  \"pad_token\": null,\n",
      CommonConfig(max_length), "}\n");
  return {
      {"vocab.json", vocab + "\n"},
      // GPT-2's header line; no merges: every token is one byte.
      {"merges.txt", "#version: 0.2\n"},
      {"tokenizer.json", tokenizer},
      {"tokenizer_config.json", config},
  };
}

absl::StatusOr<std::vector<HfTokenizerFile>> SentencePieceTokenizerFiles(
    const spm::ModelProto& m, int64_t max_length) {
  if (const std::string why = Untranslated(m); !why.empty()) {
    return absl::FailedPreconditionError(why);
  }
  const bool dummy_prefix = m.normalizer_spec().add_dummy_prefix();
  const std::string space = JsonString(kSpaceSymbol);
  // SentencePiece prepends the dummy space to any non-empty text, even one
  // that starts with a space (so no Metaspace pre-tokenizer, which skips
  // it then), and turns every space into ▁; its pieces never span a ▁ in
  // the middle, so the text is not split first.
  std::string normalizer = absl::StrCat(
      "{\"type\": \"Sequence\", \"normalizers\": [",
      dummy_prefix ? absl::StrCat("{\"type\": \"Prepend\", \"prepend\": ", space, "}, ") : "",
      "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": ", space, "}]}");
  // Decoding: ▁ back to spaces, <0xNN> pieces back to bytes, then the dummy
  // prefix's space off the front of the whole text.
  std::string decoder = absl::StrCat(
      "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
      "{\"String\": ",
      space, "}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}",
      dummy_prefix ? ", {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}" : "",
      "]}");
  const bool bpe = m.trainer_spec().model_type() == spm::TrainerSpec::BPE;
  // No added tokens: HF would match their text ("<s>") before the model,
  // which SentencePiece never does. tokenizer_config.json names them for
  // transformers, with split_special_tokens for the same reason.
  std::string tokenizer = absl::StrCat(
      "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
      "  \"added_tokens\": [],\n  \"normalizer\": ",
      normalizer, ",\n  \"pre_tokenizer\": null,\n  \"post_processor\": null,\n  \"decoder\": ",
      decoder, ",\n  \"model\": ", bpe ? BpeModel(m) : UnigramModel(m), "\n}\n");
  const spm::TrainerSpec& t = m.trainer_spec();
  std::string config = absl::StrCat(
      "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"bos_token\": ",
      TokenOrNull(m, t.bos_id()), ",\n  \"eos_token\": ", TokenOrNull(m, t.eos_id()),
      ",\n  \"unk_token\": ", TokenOrNull(m, t.unk_id()), ",\n  \"pad_token\": ",
      TokenOrNull(m, t.pad_id()),
      ",\n  \"add_bos_token\": false,\n  \"add_eos_token\": false,\n"
      "  \"split_special_tokens\": true,\n",
      CommonConfig(max_length), "}\n");
  return std::vector<HfTokenizerFile>{{"tokenizer.json", tokenizer},
                                      {"tokenizer_config.json", config}};
}

absl::StatusOr<HfFolderTokenizer> InspectHfFolderTokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  using Kind = HfFolderTokenizer::Kind;
  HfFolderTokenizer t;
  std::error_code ec;
  auto there = [&](const char* name) { return fs::exists(absl::StrCat(dir, "/", name), ec); };
  if (there("tokenizer.model")) {
    t.file = absl::StrCat(dir, "/tokenizer.model");
    auto model = ReadSentencePieceModel(t.file);
    if (!model.ok()) return model.status();
    t.kind = Kind::kSentencePiece;
    t.model = *std::move(model);
    return t;
  }
  if (there("tokenizer.json")) {
    t.file = absl::StrCat(dir, "/tokenizer.json");
    auto json = ReadJsonObject(t.file);
    if (!json.ok()) return json.status();
    t.kind = Kind::kOther;
    auto model = json->fields().find("model");
    if (model != json->fields().end() && model->second.has_struct_value()) {
      const auto& m = model->second.struct_value().fields();
      auto type = m.find("type"), vocab = m.find("vocab"), merges = m.find("merges");
      if (type != m.end() && type->second.string_value() == "BPE" && vocab != m.end() &&
          vocab->second.has_struct_value() && IsByteLevelVocab(vocab->second.struct_value()) &&
          (merges == m.end() || merges->second.list_value().values_size() == 0)) {
        t.kind = Kind::kByteLevel;
      }
    }
    return t;
  }
  if (there("vocab.json")) {
    t.file = absl::StrCat(dir, "/vocab.json");
    auto vocab = ReadJsonObject(t.file);
    if (!vocab.ok()) return vocab.status();
    t.kind = Kind::kOther;
    if (IsByteLevelVocab(*vocab)) {
      auto none = there("merges.txt") ? NoMerges(absl::StrCat(dir, "/merges.txt"))
                                      : absl::StatusOr<bool>(true);
      if (!none.ok()) return none.status();
      if (*none) t.kind = Kind::kByteLevel;
    }
  }
  return t;
}

std::vector<std::string> HfTokenizerFileNames() {
  return {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json",
          "tokenizer.model"};
}

}  // namespace mnt::gpt2

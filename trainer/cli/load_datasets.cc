#include "trainer/cli/load_datasets.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/data/dataset.h"
#include "trainer/data/digits.h"
#include "trainer/data/idx.h"
#include "trainer/data/fortunes.h"
#include "trainer/data/sentencepiece_text.h"
#include "trainer/data/text.h"
#include "trainer/data/token_shards.h"

namespace mnt::trainer {
namespace {

// Token shards hold uint16 tokens.
constexpr int64_t kMaxShardVocab = 65536;

absl::StatusOr<LoadedDatasets> FromClassification(ClassificationData all,
                                                  ClassificationData* test,
                                                  const TrainConfig& config,
                                                  const std::string& name) {
  LoadedDatasets out;
  ClassificationData train, eval;
  if (test != nullptr) {
    train = std::move(all);
    eval = std::move(*test);
  } else {
    auto split = SplitTrainValidation(all, config.data().validation_fraction(),
                                      config.seed());
    if (!split.ok()) return split.status();
    train = std::move(split->train);
    eval = std::move(split->validation);
  }
  out.description = absl::StrFormat(
      "data: %s, %d training and %d evaluation examples, %d classes", name,
      train.num_examples, eval.num_examples, train.num_classes);
  out.train = MakeClassificationSource(std::move(train));
  out.eval = MakeClassificationSource(std::move(eval));
  return out;
}

// Token windows from shards; without validation shards the last
// validation_fraction of the training tokens is held out.
absl::StatusOr<LoadedDatasets> FromShards(const TrainConfig& config,
                                          const std::string& train_glob,
                                          const std::string& val_glob,
                                          const std::string& name) {
  const DataConfig& d = config.data();
  int64_t vocab = d.vocab_size();
  if (vocab == 0) {
    // Byte-level unless a token needs GPT-2's vocabulary.
    auto probe = LoadTokenShards(train_glob, 65536);
    if (!probe.ok()) return probe.status();
    int32_t max_token = 0;
    for (int32_t t : probe->tokens) max_token = std::max(max_token, t);
    vocab = max_token < kByteVocab ? kByteVocab : kGpt2Vocab;
  }
  auto train = LoadTokenShards(train_glob, vocab);
  if (!train.ok()) return train.status();
  TokenData eval;
  if (!val_glob.empty()) {
    auto v = LoadTokenShards(val_glob, vocab);
    if (!v.ok()) return v.status();
    eval = std::move(*v);
  } else {
    auto split = SplitTokens(*train, d.validation_fraction(), d.seq_len() + 1);
    if (!split.ok()) {
      return absl::Status(split.status().code(),
                          absl::StrCat(train_glob, ": ", split.status().message()));
    }
    *train = std::move(split->train);
    eval = std::move(split->validation);
  }
  for (const TokenData* t : {&*train, &eval}) {
    if (static_cast<int64_t>(t->tokens.size()) < d.seq_len() + 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": ", t->tokens.size(), " tokens, fewer than one window of --seq_len=",
          d.seq_len(), " + 1"));
    }
  }
  LoadedDatasets out;
  out.description = absl::StrFormat(
      "data: %s, %d training and %d evaluation tokens, vocabulary %d", name,
      train->tokens.size(), eval.tokens.size(), vocab);
  out.train = MakeTokenWindowSource(std::move(*train), d.seq_len());
  out.eval = MakeTokenWindowSource(std::move(eval), d.seq_len());
  return out;
}

}  // namespace

absl::StatusOr<LoadedDatasets> LoadDatasets(const TrainConfig& config,
                                            const std::string& digits_csv_hint) {
  const DataConfig& d = config.data();
  std::string tokenizer_model_path;
  if (d.tokenizer() == "sentencepiece" && d.dataset() != "text") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tokenizer=sentencepiece tokenizes --dataset=text; --dataset=", d.dataset(),
        " comes tokenized"));
  }
  if (d.dataset() == "digits") {
    auto csv = FindDigitsCsv(digits_csv_hint);
    if (!csv.ok()) return csv.status();
    const std::string cache = d.cache_dir().empty() ? DefaultCacheDir() : d.cache_dir();
    auto data = LoadDigits(cache, *csv);
    if (!data.ok()) return data.status();
    return FromClassification(std::move(*data), nullptr, config,
                              "scikit-learn digits (8x8)");
  }
  if (d.dataset() == "idx") {
    auto train = ReadIdxClassification(d.train_images(), d.train_labels());
    if (!train.ok()) return train.status();
    if (!d.test_images().empty()) {
      auto test = ReadIdxClassification(d.test_images(), d.test_labels(),
                                        train->num_classes);
      if (!test.ok()) return test.status();
      if (test->example_dims != train->example_dims) {
        return absl::InvalidArgumentError(absl::StrCat(
            d.test_images(), ": example shape differs from ", d.train_images()));
      }
      return FromClassification(std::move(*train), &*test, config, d.train_images());
    }
    return FromClassification(std::move(*train), nullptr, config, d.train_images());
  }
  if (d.dataset() == "fortunes") {
    const std::string cache = d.cache_dir().empty() ? DefaultCacheDir() : d.cache_dir();
    auto globs = PrepareFortunesShards(kFortunesDir, cache, d.validation_fraction());
    if (!globs.ok()) return globs.status();
    return FromShards(config, globs->train, globs->validation,
                      "fortunes (Debian fortunes-min, byte-level)");
  }
  if (d.dataset() == "shards") {
    return FromShards(config, d.train_shards(), d.val_shards(), d.train_shards());
  }
  if (d.dataset() == "text") {
    const bool subwords = d.tokenizer() == "sentencepiece";
    if (!subwords && !d.tokenizer().empty() && d.tokenizer() != "bytes") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tokenizer=", d.tokenizer(), " is not bytes or sentencepiece"));
    }
    std::string tokenizer = "byte-level vocabulary";
    const std::string cache = d.cache_dir().empty() ? DefaultCacheDir() : d.cache_dir();
    // The tokens are also kept as llm.c shards (uint16 tokens) in the cache,
    // named like the tokenizer: --dataset=shards trains on them as they are.
    std::string shard_key;
    bool fresh_tokenizer = false;
    absl::StatusOr<TokenData> tokens;
    if (subwords) {
      SentencePieceOptions o;
      o.type = d.tokenizer_type().empty() ? "bpe" : d.tokenizer_type();
      o.vocab = d.vocab_size() > 0 ? d.vocab_size() : 1024;
      o.model = d.tokenizer_model();
      o.cache_dir = cache;
      if (o.model.empty() && o.vocab > kMaxShardVocab) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--vocab_size=", o.vocab, ": the text's tokens are kept as llm.c shards of "
            "uint16 tokens, which hold a vocabulary of at most ", kMaxShardVocab));
      }
      auto sp = TokenizeWithSentencePiece(d.text_path(), o);
      if (!sp.ok()) return sp.status();
      if (sp->tokens.vocab > kMaxShardVocab) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--tokenizer_model=", sp->model_path, ": ", sp->tokens.vocab,
            " pieces; the text's tokens are kept as llm.c shards of uint16 tokens, which "
            "hold a vocabulary of at most ", kMaxShardVocab));
      }
      tokenizer = absl::StrFormat("SentencePiece %s vocabulary %d (%s %s)", o.type,
                                  sp->tokens.vocab, sp->trained ? "trained:" : "model",
                                  sp->model_path);
      tokenizer_model_path = sp->model_path;
      shard_key = sp->cache_key;
      fresh_tokenizer = sp->trained;
      tokens = std::move(sp->tokens);
    } else {
      tokens = LoadTextBytes(d.text_path());
      if (tokens.ok()) {
        // One byte per token: the hash of the tokens is one of the text.
        const auto& t = tokens->tokens;
        shard_key = absl::StrFormat(
            "bytes-%d-%016x", kByteVocab,
            StableHash(absl::string_view(reinterpret_cast<const char*>(t.data()),
                                         t.size() * sizeof(t[0]))));
      }
    }
    if (!tokens.ok()) return tokens.status();
    auto split = SplitTokens(*tokens, d.validation_fraction(), d.seq_len() + 1);
    if (!split.ok()) {
      return absl::Status(split.status().code(),
                          absl::StrCat(d.text_path(), ": ", split.status().message()));
    }
    const TextShardPaths shards =
        TextShardPathsFor(cache + "/tokenizers", shard_key, d.validation_fraction());
    if (auto s = KeepTextShards(shards, split->train, split->validation, fresh_tokenizer);
        !s.ok()) {
      return s;
    }
    // Several files: how many the list and globs named (text.h says the order).
    std::string name = d.text_path();
    if (auto files = TextFiles(d.text_path()); files.ok() && files->size() > 1) {
      name = absl::StrFormat("%s (%d files, joined in order)", name, files->size());
    }
    LoadedDatasets out;
    out.description = absl::StrFormat(
        "data: %s, %d training and %d evaluation tokens, %s", name,
        split->train.tokens.size(), split->validation.tokens.size(), tokenizer);
    out.shards_description = absl::StrFormat(
        "tokens: %s (%d tokens), %s (%d)", shards.train, split->train.tokens.size(),
        shards.validation, split->validation.tokens.size());
    out.tokenizer_model = tokenizer_model_path;
    out.train = MakeTokenWindowSource(std::move(split->train), d.seq_len());
    out.eval = MakeTokenWindowSource(std::move(split->validation), d.seq_len());
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dataset '", d.dataset(), "'"));
}

}  // namespace mnt::trainer

// llm.c's token shard format: a 1024-byte header of 256 little-endian int32
// (magic 20240520, version 1, token count, the rest 0), then `count` uint16
// tokens. Also the byte-level tokenizer that turns text into such shards.
#ifndef MANTISSA_TRAINER_DATA_TOKEN_SHARDS_H_
#define MANTISSA_TRAINER_DATA_TOKEN_SHARDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainer/data/dataset.h"

namespace mnt {
namespace trainer {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr size_t kShardHeaderBytes = 256 * sizeof(int32_t);
inline constexpr int64_t kGpt2Vocab = 50257;

// Writes atomically (temp file + rename): an existing file is replaced only
// by a complete shard. Tokens must be in [0, 65535].
absl::Status WriteTokenShard(const std::string& path,
                             const std::vector<int32_t>& tokens);

// Reads one shard; refuses (one line naming the file) a bad magic, a wrong
// version, a size that does not match the count, and any token >= vocab.
absl::StatusOr<std::vector<int32_t>> ReadTokenShard(const std::string& path,
                                                    int64_t vocab);

// The same on a shard's bytes; `path` names it in errors (tools/fuzz).
absl::StatusOr<std::vector<int32_t>> ParseTokenShard(const std::string& bytes,
                                                     const std::string& path,
                                                     int64_t vocab);

// Files matching a glob pattern, sorted; NotFound when none match.
absl::StatusOr<std::vector<std::string>> GlobShards(const std::string& pattern);

// The concatenated tokens of every shard matching `pattern`.
absl::StatusOr<TokenData> LoadTokenShards(const std::string& pattern,
                                          int64_t vocab);

// Byte-level tokenizer: each byte of `text` is a token in [0, 256).
std::vector<int32_t> ByteTokens(absl::string_view text);

// FNV-1a (64 bit) of `bytes`: cache keys that are the same in every process
// (unlike absl::Hash's per-process seed).
uint64_t StableHash(absl::string_view bytes);

// A tokenized text kept as llm.c shards in the converted-data cache:
// <dir>/<key>-val<fraction>_train_000.bin and ..._val_000.bin, where `key`
// names what made the tokens (text, tokenizer) and `fraction` how they were
// split (--validation_fraction).
struct TextShardPaths {
  std::string train;
  std::string validation;
};
TextShardPaths TextShardPathsFor(const std::string& dir, const std::string& key,
                                 double validation_fraction);

// Writes the training and validation tokens to `paths`; a shard already
// there with exactly the right size is kept unless `rewrite` (the key in its
// name fixes its tokens; `rewrite` when the tokenizer itself was just made).
absl::Status KeepTextShards(const TextShardPaths& paths, const TokenData& train,
                            const TokenData& validation, bool rewrite);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_TOKEN_SHARDS_H_

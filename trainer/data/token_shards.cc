#include "trainer/data/token_shards.h"

#include <glob.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/io/atomic_file.h"

namespace mnt {
namespace trainer {

absl::Status WriteTokenShard(const std::string& path,
                             const std::vector<int32_t>& tokens) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", tokens.size(), " tokens do not fit one shard"));
  }
  std::string bytes(kShardHeaderBytes + 2 * tokens.size(), '\0');
  int32_t header[256] = {kShardMagic, kShardVersion,
                         static_cast<int32_t>(tokens.size())};
  std::memcpy(&bytes[0], header, kShardHeaderBytes);  // x86-64: little-endian
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": token ", i, " = ", tokens[i], " does not fit uint16"));
    }
    const uint16_t t = static_cast<uint16_t>(tokens[i]);
    std::memcpy(&bytes[kShardHeaderBytes + 2 * i], &t, 2);
  }
  return WriteFileAtomic(path, bytes);
}

absl::StatusOr<std::vector<int32_t>> ReadTokenShard(const std::string& path,
                                                    int64_t vocab) {
  // The header's count is an int32: no valid shard is larger than this.
  constexpr int64_t kMaxShardBytes = kShardHeaderBytes + 2 * int64_t{INT32_MAX};
  std::string bytes;
  if (auto s = ReadWholeFile(path, &bytes, kMaxShardBytes); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("token shard: ", s.message()));
  }
  return ParseTokenShard(bytes, path, vocab);
}

absl::StatusOr<std::vector<int32_t>> ParseTokenShard(const std::string& bytes,
                                                     const std::string& path,
                                                     int64_t vocab) {
  if (bytes.size() < kShardHeaderBytes) {
    return absl::DataLossError(absl::StrCat(
        path, ": truncated token shard (", bytes.size(),
        " bytes, the header alone is 1024)"));
  }
  int32_t header[256];
  std::memcpy(header, bytes.data(), kShardHeaderBytes);
  if (header[0] != kShardMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a token shard (magic ", header[0], ", expected ",
        kShardMagic, ")"));
  }
  if (header[1] != kShardVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": token shard version ", header[1], ", expected ", kShardVersion));
  }
  const int64_t count = header[2];
  const uint64_t expected = kShardHeaderBytes + 2 * static_cast<uint64_t>(std::max<int64_t>(count, 0));
  if (count < 0 || bytes.size() != expected) {
    return absl::DataLossError(absl::StrCat(
        path, ": header says ", count, " tokens (", expected,
        " bytes) but the file has ", bytes.size(), " bytes"));
  }
  std::vector<int32_t> tokens(count);
  for (int64_t i = 0; i < count; ++i) {
    uint16_t t;
    std::memcpy(&t, bytes.data() + kShardHeaderBytes + 2 * i, 2);
    if (t >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": token ", i, " = ", t, " is outside the vocabulary of ", vocab));
    }
    tokens[i] = t;
  }
  return tokens;
}

absl::StatusOr<std::vector<std::string>> GlobShards(const std::string& pattern) {
  glob_t g{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> paths;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (paths.empty()) {
    return absl::NotFoundError(absl::StrCat("no token shards match '", pattern, "'"));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

absl::StatusOr<TokenData> LoadTokenShards(const std::string& pattern,
                                          int64_t vocab) {
  auto paths = GlobShards(pattern);
  if (!paths.ok()) return paths.status();
  TokenData data;
  data.vocab = vocab;
  for (const std::string& p : *paths) {
    auto tokens = ReadTokenShard(p, vocab);
    if (!tokens.ok()) return tokens.status();
    data.tokens.insert(data.tokens.end(), tokens->begin(), tokens->end());
  }
  return data;
}

std::vector<int32_t> ByteTokens(absl::string_view text) {
  std::vector<int32_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    tokens[i] = static_cast<unsigned char>(text[i]);
  }
  return tokens;
}

uint64_t StableHash(absl::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

TextShardPaths TextShardPathsFor(const std::string& dir, const std::string& key,
                                 double validation_fraction) {
  const std::string prefix = absl::StrFormat("%s/%s-val%g", dir, key, validation_fraction);
  return {prefix + "_train_000.bin", prefix + "_val_000.bin"};
}

absl::Status KeepTextShards(const TextShardPaths& paths, const TokenData& train,
                            const TokenData& validation, bool rewrite) {
  if (auto s = MakeDirectories(std::filesystem::path(paths.train).parent_path().string());
      !s.ok()) {
    return s;
  }
  for (const auto& [path, data] :
       {std::pair{&paths.train, &train}, std::pair{&paths.validation, &validation}}) {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(*path, ec);
    if (!rewrite && !ec && size == kShardHeaderBytes + 2 * data->tokens.size()) continue;
    if (auto s = WriteTokenShard(*path, data->tokens); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace trainer
}  // namespace mnt

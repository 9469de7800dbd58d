// llm.c token shards: round trip, and every malformed file refused with one
// line that names it, without replacing an existing good file.
#include "trainer/data/token_shards.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace mnt {
namespace trainer {
namespace {

std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
         "/" + name;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(TokenShardsTest, RoundTripsAndMatchesLlmcLayout) {
  const unsigned seed = std::random_device{}();
  std::printf("seed = %u\n", seed);
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(1000);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % kGpt2Vocab);
  const std::string path = TempPath("a_000.bin");
  ASSERT_TRUE(WriteTokenShard(path, tokens).ok());
  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), 1024u + 2 * tokens.size());
  int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 1000);
  uint16_t first;
  std::memcpy(&first, bytes.data() + 1024, 2);
  EXPECT_EQ(first, tokens[0]);
  auto back = ReadTokenShard(path, kGpt2Vocab);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, tokens);

  ASSERT_TRUE(WriteTokenShard(TempPath("a_001.bin"), {1, 2, 3}).ok());
  auto all = LoadTokenShards(TempPath("a_*.bin"), kGpt2Vocab);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->tokens.size(), 1003u);
  EXPECT_EQ(all->tokens.back(), 3);
}

TEST(TokenShardsTest, MalformedShardsAreRefusedInOneLine) {
  const std::string path = TempPath("bad.bin");
  ASSERT_TRUE(WriteTokenShard(path, {5, 300, 7}).ok());
  const std::string good = ReadAll(path);

  EXPECT_EQ(ReadTokenShard(path, 256).status().message(),
            path + ": token 1 = 300 is outside the vocabulary of 256");
  std::string bad = good;
  bad[0] = 1;
  WriteAll(path, bad);
  EXPECT_EQ(ReadTokenShard(path, 50257).status().message(),
            path + ": not a token shard (magic 20240385, expected 20240520)");
  bad = good;
  bad[4] = 2;
  WriteAll(path, bad);
  EXPECT_EQ(ReadTokenShard(path, 50257).status().message(),
            path + ": token shard version 2, expected 1");
  WriteAll(path, good.substr(0, good.size() - 1));
  EXPECT_EQ(ReadTokenShard(path, 50257).status().message(),
            path + ": header says 3 tokens (1030 bytes) but the file has 1029 bytes");
  WriteAll(path, good.substr(0, 100));
  EXPECT_EQ(ReadTokenShard(path, 50257).status().message(),
            path + ": truncated token shard (100 bytes, the header alone is 1024)");
  EXPECT_EQ(LoadTokenShards(TempPath("none_*.bin"), 256).status().message(),
            "no token shards match '" + TempPath("none_*.bin") + "'");

  // A refused write leaves the existing file untouched.
  WriteAll(path, good);
  EXPECT_FALSE(WriteTokenShard(path, {1, 70000}).ok());
  EXPECT_EQ(ReadAll(path), good);
}

TEST(TokenShardsTest, KeepsATokenizedTextAsShards) {
  const TextShardPaths paths = TextShardPathsFor(TempPath("kept/tok"), "bpe-300-00ff", 0.1);
  EXPECT_EQ(paths.train, TempPath("kept/tok") + "/bpe-300-00ff-val0.1_train_000.bin");
  EXPECT_EQ(paths.validation, TempPath("kept/tok") + "/bpe-300-00ff-val0.1_val_000.bin");
  TokenData train{{1, 2, 299, 65535}, 65536}, val{{7, 8}, 65536};
  ASSERT_TRUE(KeepTextShards(paths, train, val, false).ok());  // makes the directory
  EXPECT_EQ(*ReadTokenShard(paths.train, 65536), train.tokens);
  EXPECT_EQ(*ReadTokenShard(paths.validation, 65536), val.tokens);
  // Already there with the right size: kept; `rewrite` (a new tokenizer)
  // or another size: written again.
  const TokenData other_val{{9, 9}, 65536};
  ASSERT_TRUE(KeepTextShards(paths, train, other_val, false).ok());
  EXPECT_EQ(*ReadTokenShard(paths.validation, 65536), val.tokens);
  ASSERT_TRUE(KeepTextShards(paths, train, other_val, true).ok());
  EXPECT_EQ(*ReadTokenShard(paths.validation, 65536), other_val.tokens);
  ASSERT_TRUE(KeepTextShards(paths, train, TokenData{{5, 6, 7}, 65536}, false).ok());
  EXPECT_EQ(*ReadTokenShard(paths.validation, 65536), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(StableHash(""), 14695981039346656037ull);
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cull);  // FNV-1a 64
}

TEST(TokenShardsTest, ByteTokenizer) {
  EXPECT_EQ(ByteTokens("a\xff"), (std::vector<int32_t>{97, 255}));
}

}  // namespace
}  // namespace trainer
}  // namespace mnt

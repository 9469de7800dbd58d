// SentencePiece on text: a trained model encodes the text into fewer tokens
// than bytes and decodes them back to the same bytes (byte fallback covers
// anything), the model is reused from the cache, a given model is used
// as is, and bad input is refused in one line.
#include "trainer/data/sentencepiece_text.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

// ~60 KB of made-up English-like text, the same for a given seed.
std::string WriteText(const std::string& name, uint32_t seed) {
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
                         "mixed", "precision", "training", "scales", "gradients", "loss",
                         "ünïcödé", "42", "tensor", "cores"};
  std::mt19937 rng(seed);
  std::string text;
  for (int line = 0; line < 2000; ++line) {
    for (int w = 0; w < 5; ++w) {
      text += words[rng() % (sizeof(words) / sizeof(words[0]))];
      text += w == 4 ? "\n" : " ";
    }
  }
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

TEST(SentencePieceTextTest, TrainsEncodesAndDecodesBackExactly) {
  for (const char* type : {"bpe", "unigram"}) {
    const std::string text = WriteText(std::string("a_") + type + ".txt", 1);
    SentencePieceOptions o;
    o.type = type;
    o.vocab = 320;  // 256 byte-fallback pieces + 3 specials + the subwords
    o.cache_dir = TempDir() + "/cache";
    auto r = TokenizeWithSentencePiece(text, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->trained);
    EXPECT_EQ(r->tokens.vocab, 320);
    const std::string original = Slurp(text);
    EXPECT_LT(r->tokens.tokens.size(), original.size() * 8 / 10) << type;
    for (int32_t t : r->tokens.tokens) {
      ASSERT_GE(t, 0);
      ASSERT_LT(t, 320);
    }
    auto back = DecodeWithSentencePiece(r->model_path, r->tokens.tokens);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, original) << type;
    // The same command again: the cached model, the same tokens.
    auto again = TokenizeWithSentencePiece(text, o);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->trained);
    EXPECT_EQ(again->model_path, r->model_path);
    EXPECT_EQ(again->tokens.tokens, r->tokens.tokens);
    // The tokens' cache key (their shards' names) is the model's name.
    EXPECT_EQ(again->cache_key, r->cache_key);
    EXPECT_EQ(TempDir() + "/cache/tokenizers/" + r->cache_key + ".model", r->model_path);
    // A given model on other text: used as is, bytes it never saw included.
    const std::string other = TempDir() + "/other.txt";
    std::ofstream(other, std::ios::binary) << "zebra \x01\x02 quick fox\n";
    SentencePieceOptions given = o;
    given.model = r->model_path;
    auto g = TokenizeWithSentencePiece(other, given);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(*DecodeWithSentencePiece(r->model_path, g->tokens.tokens), Slurp(other));
    EXPECT_EQ(*EncodeWithSentencePiece(r->model_path, Slurp(other)), g->tokens.tokens);
    // A given model's key: its piece count and a hash of it and the text.
    EXPECT_EQ(g->cache_key.rfind("model-320-", 0), 0u) << g->cache_key;
    EXPECT_NE(TokenizeWithSentencePiece(text, given)->cache_key, g->cache_key);
  }
}

TEST(SentencePieceTextTest, SeveralFilesAreTrainedOnJoined) {
  const std::string one = WriteText("part1.txt", 3), two = WriteText("part2.txt", 4);
  SentencePieceOptions o;
  o.vocab = 320;
  o.cache_dir = TempDir() + "/cache_joined";
  const std::string list = one + "," + two;
  auto r = TokenizeWithSentencePiece(list, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->trained);
  // The tokens decode to both files with the separator between them.
  auto back = DecodeWithSentencePiece(r->model_path, r->tokens.tokens);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Slurp(one) + "\n" + Slurp(two));
  // Every file's bytes are in the model's name: a change in the second file
  // trains another model.
  std::ofstream(two, std::ios::app | std::ios::binary) << "one more line\n";
  auto changed = TokenizeWithSentencePiece(list, o);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(changed->trained);
  EXPECT_NE(changed->cache_key, r->cache_key);
  EXPECT_NE(changed->model_path, r->model_path);
}

TEST(SentencePieceTextTest, BadInputIsOneLine) {
  SentencePieceOptions o;
  o.cache_dir = TempDir() + "/cache";
  auto missing = TokenizeWithSentencePiece(TempDir() + "/none.txt", o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
  const std::string text = WriteText("b.txt", 2);
  o.type = "wordpiece";
  EXPECT_NE(TokenizeWithSentencePiece(text, o).status().message().find("bpe or unigram"),
            std::string::npos);
  o.type = "bpe";
  o.model = text;  // not a model
  auto bad = TokenizeWithSentencePiece(text, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a SentencePiece model"), std::string::npos);
  EXPECT_EQ(std::string(bad.status().message()).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace mnt::trainer

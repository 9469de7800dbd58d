#include "trainer/data/fortunes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "trainer/data/token_shards.h"

namespace mnt {
namespace trainer {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Decode(const std::vector<int32_t>& tokens) {
  std::string s;
  for (int32_t t : tokens) s.push_back(static_cast<char>(t));
  return s;
}

TEST(FortunesTest, EntriesBecomeBlankLineSeparatedByteTokens) {
  const std::string corpus = FreshDir("corpus_ok");
  // Blank lines inside an entry stay; "%" lines become blank lines; a file
  // without a final newline still ends its last line.
  Write(corpus + "/fortunes", "one\n%\ntwo\n\nlines\n%\n");
  Write(corpus + "/riddles", "why?\n%\nbecause");
  auto globs = PrepareFortunesShards(corpus, FreshDir("cache_ok"), 0.25);
  ASSERT_TRUE(globs.ok()) << globs.status();
  auto train = ReadTokenShard(globs->train, 256);
  auto val = ReadTokenShard(globs->validation, 256);
  ASSERT_TRUE(train.ok()) << train.status();
  ASSERT_TRUE(val.ok()) << val.status();
  const std::string expected = "one\n\ntwo\n\nlines\n\nwhy?\n\nbecause\n";
  EXPECT_EQ(Decode(*train) + Decode(*val), expected);
  EXPECT_EQ(val->size(), static_cast<size_t>(std::llround(0.25 * expected.size())));
}

TEST(FortunesTest, MissingCorpusNamesThePackage) {
  auto globs = PrepareFortunesShards(FreshDir("corpus_empty"), FreshDir("cache_empty"), 0.1);
  ASSERT_FALSE(globs.ok());
  EXPECT_NE(globs.status().message().find("fortunes-min"), std::string::npos) << globs.status();
}

TEST(FortunesTest, DirectoryWhereAFileIsExpectedIsRefused) {
  const std::string corpus = FreshDir("corpus_dir");
  mkdir((corpus + "/fortunes").c_str(), 0755);
  const std::string cache = FreshDir("cache_dir");
  auto globs = PrepareFortunesShards(corpus, cache, 0.1);
  ASSERT_FALSE(globs.ok());
  EXPECT_NE(globs.status().message().find("fortunes"), std::string::npos) << globs.status();
  struct stat st;
  EXPECT_NE(stat((cache + "/fortunes/train_000.bin").c_str(), &st), 0) << "nothing written";
}

TEST(FortunesTest, OversizedFileIsRefusedBeforeReading) {
  const std::string corpus = FreshDir("corpus_big");
  const std::string path = corpus + "/literature";
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, (int64_t{64} << 20) + 1), 0);  // sparse: costs no disk
  close(fd);
  auto globs = PrepareFortunesShards(corpus, FreshDir("cache_big"), 0.1);
  ASSERT_FALSE(globs.ok());
  EXPECT_EQ(globs.status().code(), absl::StatusCode::kResourceExhausted) << globs.status();
}

}  // namespace
}  // namespace trainer
}  // namespace mnt

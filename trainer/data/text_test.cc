#include "trainer/data/text.h"

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "trainer/io/atomic_file.h"
#include "trainer/data/sampler.h"

namespace mnt {
namespace trainer {
namespace {

std::string TestDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base ? base : "/tmp") + "/text";
  EXPECT_TRUE(MakeDirectories(dir).ok());
  return dir;
}

TEST(LoadTextBytesTest, EveryByteIsATokenIncludingZeroAndHighBytes) {
  const unsigned seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  std::string bytes = std::string("a\0\xff\n", 4);
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>(rng() & 0xff));
  const std::string path = TestDir() + "/corpus.txt";
  ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
  absl::StatusOr<TokenData> data = LoadTextBytes(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->vocab, 256);
  ASSERT_EQ(data->tokens.size(), bytes.size());
  EXPECT_EQ(data->tokens[0], 'a');
  EXPECT_EQ(data->tokens[1], 0);
  EXPECT_EQ(data->tokens[2], 255);
  for (size_t i = 0; i < bytes.size(); ++i) {
    ASSERT_EQ(data->tokens[i], static_cast<unsigned char>(bytes[i]));
  }
  EXPECT_EQ(NumTextWindows(static_cast<int64_t>(data->tokens.size()), 64), (1004 - 1) / 64);
}

TEST(LoadTextBytesTest, EmptyAndMissingFiles) {
  const std::string empty = TestDir() + "/empty.txt";
  ASSERT_TRUE(WriteFileAtomic(empty, "").ok());
  EXPECT_EQ(LoadTextBytes(empty).status().message(), "text dataset " + empty + " is empty");
  const std::string missing = TestDir() + "/missing.txt";
  const absl::Status s = LoadTextBytes(missing).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(s.message()).find(missing), std::string::npos) << s;
}

TEST(TextFilesTest, ListsAndGlobsInTheStatedOrder) {
  const std::string dir = TestDir() + "/several";
  ASSERT_TRUE(MakeDirectories(dir + "/notes/sub.txt").ok());  // a directory a glob matches
  const unsigned seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  auto random_text = [&](size_t n) {
    std::string t;
    for (size_t i = 0; i < n; ++i) t.push_back(static_cast<char>(rng() & 0xff));
    return t;
  };
  const std::string b = random_text(300), a = random_text(200), more = random_text(100);
  ASSERT_TRUE(WriteFileAtomic(dir + "/notes/b.txt", b).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/notes/a.txt", a).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/more.txt", more).ok());
  // The list's order; a glob's matches by name; a file named again is not
  // read twice; spaces around an item do not count.
  const std::string spec = dir + "/more.txt, " + dir + "/notes/*.txt," + dir + "/notes/a.txt";
  auto files = TextFiles(spec);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (std::vector<std::string>{dir + "/more.txt", dir + "/notes/a.txt",
                                              dir + "/notes/b.txt"}));
  auto data = LoadTextBytes(spec);
  ASSERT_TRUE(data.ok()) << data.status();
  const std::string joined = more + "\n" + a + "\n" + b;
  ASSERT_EQ(data->tokens.size(), joined.size());
  for (size_t i = 0; i < joined.size(); ++i) {
    ASSERT_EQ(data->tokens[i], static_cast<unsigned char>(joined[i])) << i;
  }
  // One file is its bytes as they are.
  auto one = ReadTextFiles(dir + "/notes/a.txt");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->bytes, a);
}

TEST(TextFilesTest, AGlobThatMatchesNothingIsNamed) {
  const std::string dir = TestDir() + "/globs";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/x.txt", "x").ok());
  const absl::Status s = TextFiles(dir + "/x.txt," + dir + "/nope/*.md").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "--text_path: '" + dir + "/nope/*.md' matches no file");
  // A missing plain file in a list: the reader names it.
  const absl::Status missing = LoadTextBytes(dir + "/x.txt," + dir + "/gone.txt").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.message()).find(dir + "/gone.txt"), std::string::npos);
  // A file whose name holds a comma and a glob character is itself.
  ASSERT_TRUE(WriteFileAtomic(dir + "/a,b[1].txt", "odd").ok());
  auto odd = TextFiles(dir + "/a,b[1].txt");
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(*odd, std::vector<std::string>{dir + "/a,b[1].txt"});
}

}  // namespace
}  // namespace trainer
}  // namespace mnt

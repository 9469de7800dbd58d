#include "trainer/data/text.h"

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "trainer/checkpoint/atomic_file.h"
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

}  // namespace
}  // namespace trainer
}  // namespace mnt

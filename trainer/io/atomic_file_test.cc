#include "trainer/io/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace trainer {
namespace {

std::string FreshDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base ? base : "/tmp") + "/atomic_" + name;
  EXPECT_TRUE(MakeDirectories(dir).ok());
  return dir;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

std::string RandomBytes(size_t n, std::mt19937_64* rng) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>((*rng)() & 0xff);
  return s;
}

TEST(AtomicFileTest, WritesReplacesAndLeavesNoTemp) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = FreshDir("replace");
  const std::string path = dir + "/file.bin";
  const std::string first = RandomBytes(100000 + rng() % 1000, &rng);
  ASSERT_TRUE(WriteFileAtomic(path, first).ok());
  std::string read;
  ASSERT_TRUE(ReadWholeFile(path, &read).ok());
  EXPECT_EQ(read, first);
  const std::string second = RandomBytes(17, &rng);
  ASSERT_TRUE(WriteFileAtomic(path, second).ok());
  ASSERT_TRUE(ReadWholeFile(path, &read).ok());
  EXPECT_EQ(read, second);
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"file.bin"});
}

TEST(AtomicFileTest, MissingDirectoryFailsWithOneLine) {
  const std::string path = FreshDir("missing") + "/no/such/dir/file.bin";
  const absl::Status s = WriteFileAtomic(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find(path), std::string::npos) << s;
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos);
}

TEST(AtomicFileTest, FailedRenameRemovesTempAndKeepsTarget) {
  // A non-empty directory at the target makes rename() fail after the temp
  // file has been fully written and synced.
  const std::string dir = FreshDir("rename_fails");
  const std::string path = dir + "/target";
  ASSERT_TRUE(MakeDirectories(path + "/child").ok());
  const absl::Status s = WriteFileAtomic(path, "new contents");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("renaming"), std::string::npos) << s;
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"target"});
  EXPECT_EQ(ListDir(path), std::vector<std::string>{"child"});
}

TEST(AtomicFileTest, ReadMissingIsNotFound) {
  std::string contents;
  const std::string path = FreshDir("read") + "/absent";
  const absl::Status s = ReadWholeFile(path, &contents);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(s.message()).find(path), std::string::npos);
}

TEST(AtomicFileTest, MakeDirectoriesNestedAndOverFile) {
  const std::string dir = FreshDir("mkdirs");
  EXPECT_TRUE(MakeDirectories(dir + "/a/b/c").ok());
  EXPECT_TRUE(MakeDirectories(dir + "/a/b/c").ok());  // idempotent
  struct stat st;
  ASSERT_EQ(stat((dir + "/a/b/c").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_TRUE(WriteFileAtomic(dir + "/plain", "x").ok());
  const absl::Status s = MakeDirectories(dir + "/plain");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("not a directory"), std::string::npos) << s;
}

}  // namespace
}  // namespace trainer
}  // namespace mnt

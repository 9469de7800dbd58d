#include "trainer/config/user_path.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

class UserPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* h = std::getenv("HOME");
    had_home_ = h != nullptr;
    if (had_home_) old_home_ = h;
    setenv("HOME", "/home/someone", 1);
  }
  void TearDown() override {
    if (had_home_) {
      setenv("HOME", old_home_.c_str(), 1);
    } else {
      unsetenv("HOME");
    }
  }
  bool had_home_ = false;
  std::string old_home_;
};

TEST_F(UserPathTest, ExpandsALeadingTildeOnly) {
  EXPECT_EQ(ExpandUserPath("~"), "/home/someone");
  EXPECT_EQ(ExpandUserPath("~/"), "/home/someone/");
  EXPECT_EQ(ExpandUserPath("~/.cache/mantissa/runs/x"), "/home/someone/.cache/mantissa/runs/x");
  EXPECT_EQ(ExpandUserPath("runs/~/x"), "runs/~/x");
  EXPECT_EQ(ExpandUserPath("/abs/~"), "/abs/~");
  EXPECT_EQ(ExpandUserPath(""), "");
  EXPECT_EQ(ExpandUserPath("x~"), "x~");
}

TEST_F(UserPathTest, NamedUsersAndUnknownOnes) {
  const passwd* pw = getpwuid(getuid());
  ASSERT_NE(pw, nullptr);
  EXPECT_EQ(ExpandUserPath(std::string("~") + pw->pw_name + "/a"), std::string(pw->pw_dir) + "/a");
  EXPECT_EQ(ExpandUserPath("~no_such_user_mnt_42/a"), "~no_such_user_mnt_42/a");
}

TEST_F(UserPathTest, WithoutHomeUsesThePasswdEntry) {
  unsetenv("HOME");
  const passwd* pw = getpwuid(getuid());
  ASSERT_NE(pw, nullptr);
  EXPECT_EQ(ExpandUserPath("~/x"), std::string(pw->pw_dir) + "/x");
}

}  // namespace
}  // namespace mnt::trainer

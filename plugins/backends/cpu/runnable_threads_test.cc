// The /proc parsing behind the thread governor's input, and the live read.
#include "plugins/backends/cpu/runnable_threads.h"

#include "gtest/gtest.h"

namespace mnt::cpu {
namespace {

TEST(RunnableThreadsTest, ReadsTheRunningCountOfLoadavg) {
  EXPECT_EQ(ParseRunningField("0.52 0.58 0.59 3/467 12345\n"), 3);
  EXPECT_EQ(ParseRunningField("12.00 9.10 4.00 17/1024 99"), 17);
  EXPECT_EQ(ParseRunningField("0.52 0.58 0.59"), -1);
  EXPECT_EQ(ParseRunningField("0.52 0.58 0.59 x/467 1"), -1);
  EXPECT_EQ(ParseRunningField(""), -1);
}

TEST(RunnableThreadsTest, FindsTheStateAfterTheLastParenthesis) {
  EXPECT_TRUE(StatSaysRunnable("123 (train) R 1 2 3"));
  EXPECT_FALSE(StatSaysRunnable("123 (train) S 1 2 3"));
  // A command name with ") R" in it must not fool the parse.
  EXPECT_FALSE(StatSaysRunnable("123 (a) R b) S 1 2"));
  EXPECT_FALSE(StatSaysRunnable("garbage"));
}

TEST(RunnableThreadsTest, TheLiveCountIsANonNegativeNumber) {
  // This test's own thread is runnable while it reads, and not counted.
  const double others = OtherRunnableThreads();
  EXPECT_GE(others, 0.0);
  EXPECT_LT(others, 100000.0);
}

}  // namespace
}  // namespace mnt::cpu

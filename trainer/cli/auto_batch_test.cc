#include "trainer/cli/auto_batch.h"

#include "gtest/gtest.h"
#include "trainer/cli/memory_limit.h"

namespace mnt::trainer {
namespace {

TEST(MemoryLimitTest, ReadsMemAvailable) {
  EXPECT_EQ(MemAvailableBytes("MemTotal:       24000000 kB\nMemFree:  100 kB\n"
                              "MemAvailable:   12345678 kB\nBuffers: 1 kB\n"),
            int64_t{12345678} * 1024);
  EXPECT_EQ(MemAvailableBytes("MemTotal: 1 kB\n"), -1);
  EXPECT_EQ(MemAvailableBytes("MemAvailable: x kB\n"), -1);
  EXPECT_EQ(MemAvailableBytes("MemAvailable: 12 MB\n"), -1);
}

TEST(MemoryLimitTest, MarginIsTenPercentAtLeastOneGiB) {
  EXPECT_EQ(MemoryMargin(int64_t{100} << 30), int64_t{10} << 30);
  EXPECT_EQ(MemoryMargin(int64_t{4} << 30), int64_t{1} << 30);
}

TEST(MemoryLimitTest, GivenLimitWinsAndDeviceTotalLessMargin) {
  auto given = ResolveMemoryLimit(2.5, true, 0);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->bytes, int64_t{2500000000});
  auto device = ResolveMemoryLimit(0, false, int64_t{80} << 30);
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(device->bytes, (int64_t{80} << 30) - (int64_t{8} << 30));
  EXPECT_FALSE(ResolveMemoryLimit(0, false, 0).ok());
  EXPECT_FALSE(ResolveMemoryLimit(0, false, int64_t{1} << 29).ok());
  auto host = ResolveMemoryLimit(0, true, 0);  // this machine's MemAvailable
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_GT(host->bytes, 0);
}

TEST(AutoBatchTest, LargestDivisor) {
  EXPECT_EQ(LargestDivisorAtMost(96, 40), 32);
  EXPECT_EQ(LargestDivisorAtMost(96, 96), 96);
  EXPECT_EQ(LargestDivisorAtMost(96, 500), 96);
  EXPECT_EQ(LargestDivisorAtMost(97, 50), 1);
  EXPECT_EQ(LargestDivisorAtMost(12, 1), 1);
}

}  // namespace
}  // namespace mnt::trainer

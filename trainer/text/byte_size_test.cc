#include "trainer/text/byte_size.h"

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(FormatBytesTest, EachUnitAtItsBoundary) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(652595), "637.3 KiB");
  EXPECT_EQ(FormatBytes((int64_t{1} << 20) - 1), "1024.0 KiB");
  EXPECT_EQ(FormatBytes(int64_t{1} << 20), "1.00 MiB");
  EXPECT_EQ(FormatBytes(int64_t{113775} << 20), "111.11 GiB");
}

}  // namespace
}  // namespace mnt::trainer

#include "models/cnn/cnn_options.h"

#include "gtest/gtest.h"

namespace mnt::cnn {
namespace {

TEST(CnnOptionsTest, DefaultsAndOverrides) {
  CnnOptions o;
  ASSERT_TRUE(ParseCnnOptions(nullptr, &o).ok());
  EXPECT_EQ(o.depth, 2);
  EXPECT_EQ(o.width, 16);
  EXPECT_FLOAT_EQ(o.bn_momentum, 0.1f);
  ASSERT_TRUE(ParseCnnOptions("depth=0,width=8,bn_momentum=0.5", &o).ok());
  EXPECT_EQ(o.depth, 0);
  EXPECT_EQ(o.width, 8);
  EXPECT_FLOAT_EQ(o.bn_momentum, 0.5f);
}

TEST(CnnOptionsTest, BadValuesAreOneLine) {
  CnnOptions o;
  EXPECT_EQ(ParseCnnOptions("depth=17", &o).message(),
            "cnn options: depth is 17, expected 0..16");
  EXPECT_EQ(ParseCnnOptions("width=0", &o).message(),
            "cnn options: width is 0, expected 1..1024");
  EXPECT_EQ(ParseCnnOptions("bn_momentum=2", &o).message(),
            "cnn options: bn_momentum is 2, expected 0..1");
  EXPECT_EQ(ParseCnnOptions("hidden=3", &o).message(),
            "cnn options: unknown key 'hidden' (known: bn_momentum, depth, width)");
}

}  // namespace
}  // namespace mnt::cnn

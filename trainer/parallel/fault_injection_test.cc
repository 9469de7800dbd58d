#include "trainer/parallel/fault_injection.h"

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(ParseInjectedFault, ReadsRankAndStep) {
  const auto f = ParseInjectedFault("1:7");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 1);
  EXPECT_EQ(f->step, 7);
}

TEST(ParseInjectedFault, EmptyMeansNone) { EXPECT_FALSE(ParseInjectedFault("").has_value()); }

TEST(ParseInjectedFault, RefusesMalformedValues) {
  for (const char* bad : {"1", "1:", ":3", "a:3", "1:0", "-1:3", "1:2:3", "1:x"}) {
    EXPECT_FALSE(ParseInjectedFault(bad).has_value()) << bad;
  }
}

TEST(ParseWeightFillFault, ReadsParameterValueAndStep) {
  const auto f = ParseWeightFillFault("layer1.weight:30000:3");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->param, "layer1.weight");
  EXPECT_EQ(f->value, 30000);
  EXPECT_EQ(f->step, 3);
  EXPECT_FALSE(ParseWeightFillFault("").has_value());
  for (const char* bad : {"layer1.weight", ":1:2", "w:x:2", "w:1:0", "w:1", "w:1:2:3"}) {
    EXPECT_FALSE(ParseWeightFillFault(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace mnt::trainer

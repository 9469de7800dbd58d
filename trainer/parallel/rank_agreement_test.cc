#include "trainer/parallel/rank_agreement.h"

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(FirstDisagreementTest, AgreeingRanksSayNothing) {
  const RankFacts facts = {{"config", "lr: 0.01"}, {"data", "1797 examples"}};
  EXPECT_EQ(FirstDisagreement({facts, facts, facts}), "");
  EXPECT_EQ(FirstDisagreement({facts}), "");
}

TEST(FirstDisagreementTest, NamesTheRankAndTheFirstDifference) {
  const RankFacts zero = {{"config", "lr: 0.01"}, {"model plugin mlp", "abi 1.9, 10 bytes"}};
  RankFacts two = zero;
  two[1].second = "abi 1.9, 12 bytes";
  const std::string d = FirstDisagreement({zero, zero, two});
  EXPECT_EQ(d,
            "rank 2 disagrees with rank 0 on the model plugin mlp: 'abi 1.9, 12 bytes' vs rank "
            "0's 'abi 1.9, 10 bytes' (every rank must run the same command, plugin files and "
            "data)");
}

TEST(FirstDisagreementTest, AMissingFactIsADifference) {
  const RankFacts zero = {{"config", "a"}, {"config", "b"}};
  const RankFacts one = {{"config", "a"}};
  EXPECT_NE(FirstDisagreement({zero, one}).find("rank 1 disagrees"), std::string::npos);
  EXPECT_NE(FirstDisagreement({zero, one}).find("(nothing)"), std::string::npos);
}

}  // namespace
}  // namespace mnt::trainer

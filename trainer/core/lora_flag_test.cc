// --lora's value as the model options it becomes, its one-line refusals,
// and the --freeze pattern it adds (all but the adapters).
#include "trainer/core/lora_flag.h"

#include "gtest/gtest.h"
#include "trainer/core/freeze_patterns.h"

namespace mnt::trainer {
namespace {

TEST(LoraFlagTest, BecomesTheModelsLoraOptions) {
  EXPECT_EQ(*LoraModelOptions("r=8,alpha=16,dropout=0.0,targets=qkvw,fcw, layer*.weight"),
            "lora_r=8,lora_alpha=16,lora_dropout=0,lora_targets=qkvw|fcw|layer*.weight");
  // PEFT's default alpha; targets anywhere.
  EXPECT_EQ(*LoraModelOptions("targets=qkvw,r=4"),
            "lora_r=4,lora_alpha=8,lora_dropout=0,lora_targets=qkvw");
}

TEST(LoraFlagTest, BadValuesAreOneLine) {
  auto error = [](const char* flag) { return std::string(LoraModelOptions(flag).status().message()); };
  EXPECT_EQ(error("r=0,targets=w"), "--lora: r='0' is not a rank from 1 to 1048576");
  EXPECT_EQ(error("r=8,alpha=x,targets=w"), "--lora: alpha='x' is not a positive number");
  EXPECT_EQ(error("r=8,dropout=0.1,targets=w"),
            "--lora: dropout=0.1: dropout on the adapters' input is not implemented; use "
            "dropout=0");
  EXPECT_EQ(error("r=8,rank=2,targets=w"),
            "--lora: unknown key 'rank' (keys: r, alpha, dropout, targets)");
  EXPECT_EQ(error("8,targets=w"),
            "--lora: expected key=value, got '8' (keys: r, alpha, dropout, targets; e.g. "
            "--lora=r=8,alpha=16,targets=qkvw,fcw)");
  EXPECT_EQ(error("r=8"),
            "--lora needs r and targets (globs over parameter names), e.g. "
            "--lora=r=8,alpha=16,targets=qkvw,attprojw for gpt2; plugin_info lists a model's "
            "parameters");
}

TEST(LoraFlagTest, ItsFreezePatternFreezesAllButTheAdapters) {
  const std::vector<std::string> names = {"wte", "qkvw", "qkvb", "qkvw.lora_A", "qkvw.lora_B",
                                          "layer0.weight", "layer0.lora_A", "layer0.lora_B"};
  auto frozen = MatchFrozen(names, kLoraFreezePattern);
  ASSERT_TRUE(frozen.ok());
  EXPECT_EQ(*frozen, (std::vector<bool>{true, true, true, false, false, true, false, false}));
  // A negated pattern that freezes nothing is refused like any other.
  EXPECT_FALSE(MatchFrozen({"a.lora_A"}, kLoraFreezePattern).ok());
}

}  // namespace
}  // namespace mnt::trainer

#include "trainer/text/nearest_name.h"

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(NearestNameTest, TyposFindTheirName) {
  const std::vector<std::string> backends = {"cpu", "cuda"};
  EXPECT_EQ(NearestName("cdua", backends), "cuda");  // two letters swapped: one edit
  EXPECT_EQ(NearestName("cpus", backends), "cpu");
  const std::vector<std::string> models = {"cnn", "gpt2", "mlp"};
  EXPECT_EQ(NearestName("gtp2", models), "gpt2");
  EXPECT_EQ(NearestName("gpt-2", models), "gpt2");
  EXPECT_EQ(NearestName("precison", {"precision", "progress"}), "precision");
}

TEST(NearestNameTest, CaseIsNoEdit) {
  const std::vector<std::string> models = {"cnn", "gpt2", "mlp"};
  // Three letters in the wrong case: more edits than "gpt2" may have.
  EXPECT_EQ(NearestName("GPT2", models), "gpt2");
  EXPECT_EQ(NearestName("Gtp2", models), "gpt2");
  EXPECT_EQ(NearestName("CPU", {"cpu", "cuda"}), "cpu");
  EXPECT_EQ(NearestName("BF16", {"bf16", "fp16", "fp32", "fp8", "tf32"}), "bf16");
  EXPECT_EQ(NearestName("TRANSFORMER", models), "");
}

TEST(NearestNameTest, ADifferentWordIsNoTypo) {
  EXPECT_EQ(NearestName("transformer9000", {"cnn", "gpt2", "mlp"}), "");
  EXPECT_EQ(NearestName("anything", {}), "");
}

}  // namespace
}  // namespace mnt::trainer

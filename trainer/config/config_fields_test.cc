#include "trainer/config/config_fields.h"

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

TEST(ConfigFieldsTest, NamesEveryFieldTheTextSetsEvenAtZero) {
  auto paths = FieldPathsInTextConfig(
      "model: \"mlp\"\nsteps: 0\ndata { seq_len: 0 }\noptimizer { lr: 0.5 }\n");
  ASSERT_TRUE(paths.ok()) << paths.status();
  EXPECT_EQ(*paths, (std::set<std::string>{"model", "steps", "data", "data.seq_len",
                                            "optimizer", "optimizer.lr"}));
}

TEST(ConfigFieldsTest, EmptyTextSetsNothing) {
  auto paths = FieldPathsInTextConfig("# nothing\n");
  ASSERT_TRUE(paths.ok());
  EXPECT_TRUE(paths->empty());
}

TEST(ConfigFieldsTest, BadTextIsAnError) {
  EXPECT_FALSE(FieldPathsInTextConfig("no_such_field: 1").ok());
}

}  // namespace
}  // namespace mnt::trainer

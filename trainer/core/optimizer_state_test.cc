// What adamw8bit and adafactor keep per parameter (optimizer_state.h), for
// stacked parameters (ABI 1.15) above all: each stacked copy is treated as
// the tensor a model with one tensor per layer would have, so GPT-2's
// [L, C] norms and biases keep 32-bit moments under adamw8bit and a full
// second moment under Adafactor, as bitsandbytes and Hugging Face give a
// per-layer GPT-2's 1-D tensors.
#include "trainer/core/optimizer_state.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/config/optimizer_options.h"
#include "trainer/config/train_config.pb.h"

namespace mnt::trainer {
namespace {

mantissa::OptimizerConfig Named(const std::string& name) {
  mantissa::OptimizerConfig c;
  c.set_name(name);
  return c;
}

std::vector<std::string> Prefixes(const std::vector<StateTensorSpec>& specs) {
  std::vector<std::string> out;
  for (const StateTensorSpec& s : specs) out.push_back(s.prefix);
  return out;
}

TEST(ParamShapeTest, CopiesAreTheProductOfTheStackedDims) {
  const ParamShape stacked{{2, 3, 5, 7}, 2};
  EXPECT_EQ(stacked.numel(), 210);
  EXPECT_EQ(stacked.copies(), 6);
  EXPECT_EQ(stacked.copy_dims(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(stacked.copy_numel(), 35);
  const ParamShape whole{{5, 7}, 0};
  EXPECT_EQ(whole.copies(), 1);
  EXPECT_EQ(whole.copy_numel(), 35);
}

TEST(OptimizerStateTest, Adamw8bitCountsACopysElementsAgainstMin8bitSize) {
  const OptimizerOptions o;  // min_8bit_size 4096, bitsandbytes' default
  // GPT-2 with 8 layers of 512: ln1w is [8, 512], 4096 elements in all.
  EXPECT_FALSE(Quantized(o, ParamShape{{8, 512}, 1}));
  EXPECT_TRUE(Quantized(o, ParamShape{{8, 512}, 0}));
  EXPECT_TRUE(Quantized(o, ParamShape{{8, 512, 512}, 1}));
  const auto config = Named("adamw8bit");
  EXPECT_EQ(Prefixes(StateTensorsOf(config, o, ParamShape{{8, 512}, 1})),
            (std::vector<std::string>{"opt.state1/", "opt.state2/"}));
  const std::vector<StateTensorSpec> matrix = StateTensorsOf(config, o, {{8, 64, 512}, 1});
  ASSERT_EQ(Prefixes(matrix),
            (std::vector<std::string>{"opt.m8/", "opt.m8_absmax/", "opt.v8/", "opt.v8_absmax/"}));
  EXPECT_EQ(matrix[0].count, 8 * 64 * 512);
  EXPECT_EQ(matrix[1].count, 8 * 64 * 512 / 256);
}

TEST(OptimizerStateTest, Adamw8bitKeepsEmbeddingsIn32BitsUnlessAsked) {
  // GPT-2's wte: [vocab, C], ABI 1.16's EMBEDDING role; a matrix of the same
  // size without the role is quantized.
  const ParamShape wte{{256, 512}, 0, MNT_PARAM_ROLE_EMBEDDING};
  const ParamShape matrix{{256, 512}, 0, MNT_PARAM_ROLE_OTHER};
  OptimizerOptions o;
  EXPECT_FALSE(Quantized(o, wte));
  EXPECT_TRUE(Quantized(o, matrix));
  const auto config = Named("adamw8bit");
  EXPECT_EQ(Prefixes(StateTensorsOf(config, o, wte)),
            (std::vector<std::string>{"opt.state1/", "opt.state2/"}));
  EXPECT_EQ(OptimizerStateBytes(config, {wte}), 8 * 256 * 512);
  o.embedding_8bit = true;
  EXPECT_TRUE(Quantized(o, wte));
  // The option parses, and reaches the byte count through the config.
  mantissa::OptimizerConfig all_8bit = Named("adamw8bit");
  all_8bit.set_optimizer_options("embedding_8bit=1");
  EXPECT_EQ(OptimizerStateBytes(all_8bit, {wte}), 2 * 256 * 512 + 2 * 512 * 4);
  // An embedding below min_8bit_size stays in 32 bits either way.
  EXPECT_FALSE(Quantized(o, ParamShape{{8, 64}, 0, MNT_PARAM_ROLE_EMBEDDING}));
}

TEST(OptimizerStateTest, AdafactorFactorsACopyOfRankTwoOrMore) {
  OptimizerOptions o;
  o.adafactor.beta1 = 0.9f;
  const auto config = Named("adafactor");
  // A stacked [L, C] (a layer's norm weights): one full second moment.
  const std::vector<StateTensorSpec> vector = StateTensorsOf(config, o, {{8, 512}, 1});
  ASSERT_EQ(Prefixes(vector), (std::vector<std::string>{"opt.v/", "opt.m/"}));
  EXPECT_EQ(vector[0].count, 8 * 512);
  // Unstacked, the same dims are one matrix: rows and columns.
  EXPECT_EQ(Prefixes(StateTensorsOf(config, o, {{8, 512}, 0})),
            (std::vector<std::string>{"opt.row/", "opt.col/", "opt.m/"}));
  // A stacked [L, R, C]: each layer's rows and columns, one layer after
  // another.
  const std::vector<StateTensorSpec> matrix = StateTensorsOf(config, o, {{8, 96, 32}, 1});
  ASSERT_EQ(Prefixes(matrix), (std::vector<std::string>{"opt.row/", "opt.col/", "opt.m/"}));
  EXPECT_EQ(matrix[0].count, 8 * 96);
  EXPECT_EQ(matrix[1].count, 8 * 32);
  EXPECT_EQ(matrix[2].count, 8 * 96 * 32);
}

TEST(OptimizerStateTest, BytesFollowTheStackedRule) {
  // adamw8bit on [8, 512] stacked: two fp32 moments (8 bytes a parameter);
  // unstacked: two code bytes and two absmax per 256 elements.
  EXPECT_EQ(OptimizerStateBytes(Named("adamw8bit"), {{{8, 512}, 1}}), 8 * 4096);
  EXPECT_EQ(OptimizerStateBytes(Named("adamw8bit"), {{{8, 512}, 0}}), 2 * 4096 + 2 * 16 * 4);
  // adafactor (no first moment) on [8, 512]: a full v, or a row and a column.
  EXPECT_EQ(OptimizerStateBytes(Named("adafactor"), {{{8, 512}, 1}}), 4 * 4096);
  EXPECT_EQ(OptimizerStateBytes(Named("adafactor"), {{{8, 512}, 0}}), 4 * (8 + 512));
  // adamw keeps two fp32 slots whatever the stacking.
  EXPECT_EQ(OptimizerStateBytes(Named("adamw"), {{{8, 512}, 1}}), 8 * 4096);
}

}  // namespace
}  // namespace mnt::trainer

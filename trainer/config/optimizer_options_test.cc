#include "trainer/config/optimizer_options.h"

#include <string>

#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

mantissa::OptimizerConfig Config(const std::string& name, const std::string& options) {
  mantissa::OptimizerConfig c;
  c.set_name(name);
  c.set_optimizer_options(options);
  return c;
}

TEST(OptimizerOptions, AdafactorDefaultsAreHfTrainers) {
  auto o = ParseOptimizerOptions(Config("adafactor", ""));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->adafactor.beta1, 0.0f);
  EXPECT_EQ(o->adafactor.decay_rate, -0.8f);
  EXPECT_EQ(o->adafactor.clip_threshold, 1.0f);
  EXPECT_EQ(o->adafactor.eps1, 1e-30f);
  EXPECT_EQ(o->adafactor.eps2, 1e-3f);
  EXPECT_FALSE(o->adafactor.relative_step);
  EXPECT_FALSE(o->adafactor.scale_parameter);
  EXPECT_FALSE(o->adafactor.warmup_init);
}

TEST(OptimizerOptions, AdafactorTakesEveryKey) {
  auto o = ParseOptimizerOptions(Config(
      "adafactor",
      "beta1=0.9, decay_rate=-0.5,clip_threshold=2,eps1=1e-20,eps2=0.01,relative_step=1,"
      "scale_parameter=1,warmup_init=1"));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->adafactor.beta1, 0.9f);
  EXPECT_EQ(o->adafactor.decay_rate, -0.5f);
  EXPECT_EQ(o->adafactor.clip_threshold, 2.0f);
  EXPECT_EQ(o->adafactor.eps1, 1e-20f);
  EXPECT_EQ(o->adafactor.eps2, 0.01f);
  EXPECT_TRUE(o->adafactor.relative_step);
  EXPECT_TRUE(o->adafactor.scale_parameter);
  EXPECT_TRUE(o->adafactor.warmup_init);
}

TEST(OptimizerOptions, Adamw8bitMinSize) {
  auto o = ParseOptimizerOptions(Config("adamw8bit", ""));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->min_8bit_size, 4096);
  o = ParseOptimizerOptions(Config("adamw8bit", "min_8bit_size=0"));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->min_8bit_size, 0);
  EXPECT_FALSE(o->embedding_8bit);  // Hugging Face Trainer's adamw_bnb_8bit
  o = ParseOptimizerOptions(Config("adamw8bit", "embedding_8bit=1,min_8bit_size=16"));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->embedding_8bit);
  EXPECT_EQ(o->min_8bit_size, 16);
}

// Each refusal is one line naming the flag and the offending piece.
TEST(OptimizerOptions, RefusesBadInput) {
  struct Case {
    const char* name;
    const char* options;
    const char* expected_piece;
  };
  for (const Case& c : {
           Case{"adafactor", "beta2=0.9", "unknown key 'beta2'"},
           Case{"adafactor", "beta1=1", "beta1=1 is out of range"},
           Case{"adafactor", "beta1=nan", "beta1='nan' is not a finite number"},
           Case{"adafactor", "decay_rate=0.8", "decay_rate=0.8 is out of range"},
           Case{"adafactor", "clip_threshold=0", "clip_threshold=0 is out of range"},
           Case{"adafactor", "eps2=2", "eps2=2 is out of range"},
           Case{"adafactor", "relative_step=2", "relative_step=2 is out of range"},
           Case{"adafactor", "warmup_init=1", "warmup_init=1 needs relative_step=1"},
           Case{"adafactor", "beta1", "expected key=value"},
           Case{"adafactor", "beta1=0.1,beta1=0.2", "given twice"},
           Case{"adamw8bit", "min_8bit_size=-1", "min_8bit_size=-1 is out of range"},
           Case{"adamw8bit", "min_8bit_size=1.5", "is not an integer"},
           Case{"adamw8bit", "beta1=0.9", "unknown key 'beta1'"},
           Case{"adamw8bit", "embedding_8bit=2", "embedding_8bit=2 is out of range"},
           Case{"adafactor", "embedding_8bit=1", "unknown key 'embedding_8bit'"},
           Case{"adamw", "eps1=1", "--optimizer=adamw takes none"},
           Case{"sgd", "x=1", "--optimizer=sgd takes none"},
       }) {
    auto o = ParseOptimizerOptions(Config(c.name, c.options));
    ASSERT_FALSE(o.ok()) << c.name << " " << c.options;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(o.status().message());
    EXPECT_NE(message.find(c.expected_piece), std::string::npos) << message;
    EXPECT_NE(message.find("--optimizer_options"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(OptimizerOptions, OthersTakeNone) {
  for (const char* name : {"adamw", "adam", "sgd"}) {
    EXPECT_TRUE(ParseOptimizerOptions(Config(name, "")).ok()) << name;
  }
}

}  // namespace
}  // namespace mnt::trainer

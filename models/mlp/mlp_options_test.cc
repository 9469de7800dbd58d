#include "models/mlp/mlp_options.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace mnt::mlp {
namespace {

std::string Error(const char* text) {
  MlpOptions o;
  sdk::Status s = ParseMlpOptions(text, &o);
  EXPECT_FALSE(s.ok()) << "accepted '" << text << "'";
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  return s.message();
}

TEST(MlpOptionsTest, Defaults) {
  MlpOptions o;
  ASSERT_TRUE(ParseMlpOptions(nullptr, &o).ok());
  EXPECT_EQ(o.hidden, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(o.activation, MNT_ACTIVATION_RELU);
  EXPECT_EQ(o.init, WeightInit::kHe);
  ASSERT_TRUE(ParseMlpOptions("activation=gelu", &o).ok());
  EXPECT_EQ(o.activation, MNT_ACTIVATION_GELU_TANH);
  EXPECT_EQ(o.init, WeightInit::kLecun);
}

TEST(MlpOptionsTest, ParsesEveryKey) {
  MlpOptions o;
  ASSERT_TRUE(
      ParseMlpOptions("hidden=128:64:3, activation=relu ,init=xavier", &o).ok());
  EXPECT_EQ(o.hidden, (std::vector<int64_t>{128, 64, 3}));
  EXPECT_EQ(o.init, WeightInit::kXavier);
}

TEST(MlpOptionsTest, Errors) {
  EXPECT_NE(Error("hiden=4").find("unknown key 'hiden'"), std::string::npos);
  EXPECT_NE(Error("hidden=0").find("hidden width 0 is 0, expected 1.."),
            std::string::npos);
  EXPECT_NE(Error("hidden=8:-2").find("hidden width 1 is -2"),
            std::string::npos);
  EXPECT_NE(Error("hidden=8:x").find("hidden='8:x' is not integers"),
            std::string::npos);
  EXPECT_NE(Error("hidden=").find("lists no widths"), std::string::npos);
  EXPECT_NE(Error("hidden=99999999").find("hidden width 0 is 99999999"),
            std::string::npos);
  EXPECT_NE(Error("activation=tanh").find("activation='tanh' is not relu"),
            std::string::npos);
  EXPECT_NE(Error("init=zeros").find("init='zeros'"), std::string::npos);
}

TEST(MlpOptionsTest, InitStd) {
  EXPECT_FLOAT_EQ(WeightInitStd(WeightInit::kHe, 50, 10), std::sqrt(2.0 / 50));
  EXPECT_FLOAT_EQ(WeightInitStd(WeightInit::kXavier, 50, 10),
                  std::sqrt(2.0 / 60));
  EXPECT_FLOAT_EQ(WeightInitStd(WeightInit::kLecun, 50, 10),
                  std::sqrt(1.0 / 50));
}

}  // namespace
}  // namespace mnt::mlp

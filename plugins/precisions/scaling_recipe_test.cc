#include "plugins/precisions/scaling_recipe.h"

#include <string>

#include "gtest/gtest.h"

namespace mnt::precision {
namespace {

ScalingRecipeConfig MustParse(const char* options) {
  ScalingRecipeConfig config;
  sdk::Status s = ParseScalingRecipe(options, "fp8", &config);
  EXPECT_TRUE(s.ok()) << "'" << (options ? options : "(null)") << "': " << s.message();
  return config;
}

std::string ParseError(const char* options) {
  ScalingRecipeConfig config;
  config.history_length = 7;  // untouched on error
  sdk::Status s = ParseScalingRecipe(options, "fp8", &config);
  EXPECT_FALSE(s.ok()) << "options '" << options << "' were accepted";
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT) << options;
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_EQ(config.history_length, 7) << options;
  return s.message();
}

void ExpectDefaults(const ScalingRecipeConfig& c) {
  EXPECT_EQ(c.recipe, MNT_SCALING_RECIPE_DELAYED);
  EXPECT_EQ(c.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.backward_dtype, MNT_DTYPE_F8_E5M2);
  EXPECT_EQ(c.history_length, 1024);
  EXPECT_EQ(c.amax_algo, MNT_AMAX_ALGO_MAX);
  EXPECT_EQ(c.margin, 0);
  EXPECT_TRUE(c.fast_accumulation_forward);
  EXPECT_TRUE(c.calibrate);
}

TEST(ScalingRecipeTest, DefaultsAreTransformerEnginesDelayedScalingHybrid) {
  ExpectDefaults(MustParse(nullptr));
  ExpectDefaults(MustParse(""));
  ExpectDefaults(MustParse(" , "));
  ExpectDefaults(ScalingRecipeConfig{});
  // Every default spelled out is the default.
  ExpectDefaults(MustParse(
      "format=hybrid,history=1024,algo=max,margin=0,recipe=delayed,fast_accumulation=1,"
      "calibrate=1"));
}

TEST(ScalingRecipeTest, ParsesEveryKey) {
  ScalingRecipeConfig c = MustParse(
      "format=e4m3, history=16, algo=most_recent, margin=3, recipe=delayed, "
      "fast_accumulation=0, calibrate=0");
  EXPECT_EQ(c.recipe, MNT_SCALING_RECIPE_DELAYED);
  EXPECT_EQ(c.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.backward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.history_length, 16);
  EXPECT_EQ(c.amax_algo, MNT_AMAX_ALGO_MOST_RECENT);
  EXPECT_EQ(c.margin, 3);
  EXPECT_FALSE(c.fast_accumulation_forward);
  EXPECT_FALSE(c.calibrate);

  // One key at a time leaves the others at their defaults.
  c = MustParse("format=e4m3");
  EXPECT_EQ(c.backward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.history_length, 1024);
  c = MustParse("format=hybrid");
  EXPECT_EQ(c.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.backward_dtype, MNT_DTYPE_F8_E5M2);
  EXPECT_EQ(MustParse("history=1").history_length, 1);
  EXPECT_EQ(MustParse("history=65536").history_length, 65536);
  EXPECT_EQ(MustParse("algo=most_recent").amax_algo, MNT_AMAX_ALGO_MOST_RECENT);
  EXPECT_EQ(MustParse("algo=max").amax_algo, MNT_AMAX_ALGO_MAX);
  EXPECT_EQ(MustParse("margin=64").margin, 64);
  EXPECT_FALSE(MustParse("fast_accumulation=0").fast_accumulation_forward);
  EXPECT_TRUE(MustParse("fast_accumulation=1").fast_accumulation_forward);
  EXPECT_FALSE(MustParse("calibrate=0").calibrate);
  EXPECT_TRUE(MustParse("calibrate=1").calibrate);
  c = MustParse("margin=2");
  EXPECT_EQ(c.margin, 2);
  EXPECT_EQ(c.recipe, MNT_SCALING_RECIPE_DELAYED);
  EXPECT_TRUE(c.calibrate);
}

TEST(ScalingRecipeTest, CurrentScalingHasNoHistoryAndNoCalibration) {
  ScalingRecipeConfig c = MustParse("recipe=current");
  EXPECT_EQ(c.recipe, MNT_SCALING_RECIPE_CURRENT);
  EXPECT_EQ(c.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.backward_dtype, MNT_DTYPE_F8_E5M2);
  EXPECT_EQ(c.history_length, 1);
  EXPECT_EQ(c.amax_algo, MNT_AMAX_ALGO_MOST_RECENT);
  EXPECT_EQ(c.margin, 0);
  EXPECT_TRUE(c.fast_accumulation_forward);
  EXPECT_FALSE(c.calibrate);
  c = MustParse("recipe=current,format=e4m3,margin=1,fast_accumulation=0");
  EXPECT_EQ(c.backward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(c.margin, 1);
  EXPECT_FALSE(c.fast_accumulation_forward);
}

TEST(ScalingRecipeTest, RefusesUnknownKeysAndMalformedStrings) {
  EXPECT_EQ(ParseError("amax_history_len=16"),
            "fp8 precision options: unknown key 'amax_history_len' (known: algo, "
            "calibrate, fast_accumulation, format, history, margin, recipe)");
  EXPECT_EQ(ParseError("hysteresis=2"),
            "fp8 precision options: unknown key 'hysteresis' (known: algo, "
            "calibrate, fast_accumulation, format, history, margin, recipe)");
  EXPECT_EQ(ParseError("history"), "fp8 precision options: expected key=value, got 'history'");
  EXPECT_EQ(ParseError("=,="), "fp8 precision options: expected key=value, got '='");
  EXPECT_EQ(ParseError("history=8,history=16"),
            "fp8 precision options: key 'history' given twice");
}

TEST(ScalingRecipeTest, RefusesEveryBadValueNamingKeyAndValue) {
  const struct {
    const char* options;
    const char* message;
  } cases[] = {
      {"format=e5m2", "fp8 precision options: format='e5m2' is not one of hybrid (E4M3 "
                      "forward, E5M2 gradients), e4m3"},
      {"format=HYBRID", "fp8 precision options: format='HYBRID' is not one of hybrid (E4M3 "
                        "forward, E5M2 gradients), e4m3"},
      {"format=", "fp8 precision options: format='' is not one of hybrid (E4M3 "
                  "forward, E5M2 gradients), e4m3"},
      {"history=0", "fp8 precision options: history=0 must be in [1, 65536] (amax history "
                    "length)"},
      {"history=65537", "fp8 precision options: history=65537 must be in [1, 65536] (amax "
                        "history length)"},
      {"history=-3", "fp8 precision options: history=-3 must be in [1, 65536] (amax "
                     "history length)"},
      {"history=1e3", "fp8 precision options: history='1e3' is not an integer"},
      {"history=many", "fp8 precision options: history='many' is not an integer"},
      {"history=99999999999999999999", "fp8 precision options: "
                                       "history='99999999999999999999' is not an integer"},
      {"algo=mean", "fp8 precision options: algo='mean' is not one of max, most_recent"},
      {"algo=most-recent", "fp8 precision options: algo='most-recent' is not one of max, "
                           "most_recent"},
      {"margin=-1", "fp8 precision options: margin=-1 must be in [0, 64] (scales "
                    "2^margin below the format's maximum)"},
      {"margin=65", "fp8 precision options: margin=65 must be in [0, 64] (scales "
                    "2^margin below the format's maximum)"},
      {"margin=0.5", "fp8 precision options: margin='0.5' is not an integer"},
      {"recipe=dynamic", "fp8 precision options: recipe='dynamic' is not one of delayed, "
                         "current"},
      {"recipe=none", "fp8 precision options: recipe='none' is not one of delayed, current"},
      {"fast_accumulation=2", "fp8 precision options: fast_accumulation='2' must be 0 or 1"},
      {"fast_accumulation=true", "fp8 precision options: fast_accumulation='true' must be "
                                 "0 or 1"},
      {"fast_accumulation=", "fp8 precision options: fast_accumulation='' must be 0 or 1"},
      {"calibrate=yes", "fp8 precision options: calibrate='yes' must be 0 or 1"},
      {"calibrate=-1", "fp8 precision options: calibrate='-1' must be 0 or 1"},
      {"recipe=current,history=16",
       "fp8 precision options: history=16 does not apply to recipe=current (each scale "
       "comes from its tensor's own amax in the pass: no history, no calibration)"},
      {"algo=max,recipe=current",
       "fp8 precision options: algo=max does not apply to recipe=current (each scale "
       "comes from its tensor's own amax in the pass: no history, no calibration)"},
      {"recipe=current,calibrate=0",
       "fp8 precision options: calibrate=0 does not apply to recipe=current (each scale "
       "comes from its tensor's own amax in the pass: no history, no calibration)"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ParseError(c.options), c.message) << c.options;
  }
}

TEST(ScalingRecipeTest, NamesThePluginInMessages) {
  ScalingRecipeConfig config;
  sdk::Status s = ParseScalingRecipe("margin=99", "fp8_custom", &config);
  EXPECT_EQ(s.message().rfind("fp8_custom precision options: margin=99", 0), 0u)
      << s.message();
}

TEST(ScalingRecipeTest, FillsTheAbiOuts) {
  MNT_Precision_GetScalingRecipe_Args a{};
  a.struct_size = MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE;
  FillScalingRecipeArgs(MustParse(""), &a);
  EXPECT_EQ(a.recipe, MNT_SCALING_RECIPE_DELAYED);
  EXPECT_EQ(a.forward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(a.backward_dtype, MNT_DTYPE_F8_E5M2);
  EXPECT_EQ(a.history_length, 1024);
  EXPECT_EQ(a.amax_algo, MNT_AMAX_ALGO_MAX);
  EXPECT_EQ(a.margin, 0);
  EXPECT_EQ(a.fast_accumulation_forward, 1);
  EXPECT_EQ(a.calibrate, 1);
  FillScalingRecipeArgs(MustParse("recipe=current,format=e4m3,margin=5,fast_accumulation=0"),
                        &a);
  EXPECT_EQ(a.recipe, MNT_SCALING_RECIPE_CURRENT);
  EXPECT_EQ(a.backward_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(a.history_length, 1);
  EXPECT_EQ(a.amax_algo, MNT_AMAX_ALGO_MOST_RECENT);
  EXPECT_EQ(a.margin, 5);
  EXPECT_EQ(a.fast_accumulation_forward, 0);
  EXPECT_EQ(a.calibrate, 0);
}

}  // namespace
}  // namespace mnt::precision

#include "plugins/precisions/loss_scaler.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::precision {
namespace {

// A literal transcription of torch's _amp_update_scale_ (CPU kernel): the
// product is formed in double and stored in the float scale; growth is
// applied only when the stored result is finite.
struct TorchReference {
  float scale;
  int64_t growth_tracker = 0;
  double growth_factor;
  double backoff_factor;
  int64_t growth_interval;

  void Update(bool found_inf) {
    if (found_inf) {
      scale = static_cast<float>(scale * backoff_factor);
      growth_tracker = 0;
    } else {
      const int64_t successful = growth_tracker + 1;
      if (successful == growth_interval) {
        const float new_scale = static_cast<float>(scale * growth_factor);
        if (std::isfinite(new_scale)) scale = new_scale;
        growth_tracker = 0;
      } else {
        growth_tracker = successful;
      }
    }
  }
};

LossScalerConfig MustParse(const char* options, bool fp16 = true,
                           const char* precision_options = "") {
  LossScalerConfig config;
  sdk::Status s = ParseLossScalerConfig(
      options, precision_options, fp16 ? "fp16" : "bf16",
      fp16 ? MNT_LOSS_SCALING_DYNAMIC : MNT_LOSS_SCALING_NONE, fp16, &config);
  EXPECT_TRUE(s.ok()) << s.message();
  return config;
}

std::string ParseError(const char* options, bool fp16 = true,
                       const char* precision_options = "") {
  LossScalerConfig config;
  sdk::Status s = ParseLossScalerConfig(
      options, precision_options, fp16 ? "fp16" : "bf16",
      fp16 ? MNT_LOSS_SCALING_DYNAMIC : MNT_LOSS_SCALING_NONE, fp16, &config);
  EXPECT_FALSE(s.ok()) << "options '" << options << "' were accepted";
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  return s.message();
}

TEST(LossScalerConfigTest, DefaultsAreGradScalers) {
  LossScalerConfig c = MustParse("");
  EXPECT_EQ(c.mode, MNT_LOSS_SCALING_DYNAMIC);
  EXPECT_EQ(c.init_scale, 65536.0f);
  EXPECT_EQ(c.recipe.growth_factor, 2.0);
  EXPECT_EQ(c.recipe.backoff_factor, 0.5);
  EXPECT_EQ(c.recipe.growth_interval, 2000);
  EXPECT_EQ(MustParse(nullptr).mode, MNT_LOSS_SCALING_DYNAMIC);
  EXPECT_EQ(MustParse(nullptr, /*fp16=*/false).mode, MNT_LOSS_SCALING_NONE);
}

TEST(LossScalerConfigTest, ParsesEveryKey) {
  LossScalerConfig c = MustParse(
      "mode=static,init_scale=1024,growth_factor=4,backoff_factor=0.25,"
      "growth_interval=7");
  EXPECT_EQ(c.mode, MNT_LOSS_SCALING_STATIC);
  EXPECT_EQ(c.init_scale, 1024.0f);
  EXPECT_EQ(c.recipe.growth_factor, 4.0);
  EXPECT_EQ(c.recipe.backoff_factor, 0.25);
  EXPECT_EQ(c.recipe.growth_interval, 7);
  EXPECT_EQ(MustParse("mode=none").mode, MNT_LOSS_SCALING_NONE);
  EXPECT_EQ(MustParse("mode=dynamic").mode, MNT_LOSS_SCALING_DYNAMIC);
}

TEST(LossScalerConfigTest, RejectsInvalidValues) {
  EXPECT_NE(ParseError("init_scale=0").find("init_scale=0 must be positive"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scale=-2").find("init_scale"), std::string::npos);
  EXPECT_NE(ParseError("init_scale=1e39").find("init_scale"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scale=inf").find("init_scale"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scale=nan").find("init_scale"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scale=1e-50").find("underflows"),
            std::string::npos);
  EXPECT_NE(ParseError("growth_factor=1").find("growth_factor=1 must be"),
            std::string::npos);
  EXPECT_NE(ParseError("growth_factor=0.5").find("growth_factor"),
            std::string::npos);
  EXPECT_NE(ParseError("backoff_factor=1").find("backoff_factor=1 must be"),
            std::string::npos);
  EXPECT_NE(ParseError("backoff_factor=0").find("backoff_factor"),
            std::string::npos);
  EXPECT_NE(ParseError("growth_interval=0").find("growth_interval=0 must be"),
            std::string::npos);
  EXPECT_NE(ParseError("growth_interval=2.5").find("growth_interval"),
            std::string::npos);
  EXPECT_NE(ParseError("mode=sometimes").find("mode='sometimes'"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scael=2").find("unknown key 'init_scael'"),
            std::string::npos);
  EXPECT_NE(ParseError("mode").find("expected key=value"), std::string::npos);
}

TEST(LossScalerConfigTest, Bf16RefusesLossScaling) {
  EXPECT_NE(ParseError("mode=dynamic", /*fp16=*/false)
                .find("loss scaling is only for fp16; bf16 has fp32's range"),
            std::string::npos);
  EXPECT_NE(ParseError("mode=static", /*fp16=*/false)
                .find("loss scaling is only for fp16"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scale=1024", /*fp16=*/false)
                .find("bf16 has no loss scaling"),
            std::string::npos);
  EXPECT_EQ(MustParse("mode=none", /*fp16=*/false).mode,
            MNT_LOSS_SCALING_NONE);
}

TEST(LossScalerConfigTest, ParsesAndChecksPrecisionOptions) {
  LossScalerConfig c = MustParse("", true, "hysteresis=3,min_scale=2,max_scale=1e6");
  EXPECT_EQ(c.recipe.hysteresis, 3);
  EXPECT_EQ(c.recipe.min_scale, 2.0f);
  EXPECT_EQ(c.recipe.max_scale, 1e6f);
  const LossScalerConfig d = MustParse("");
  EXPECT_EQ(d.recipe.hysteresis, 1);
  EXPECT_EQ(d.recipe.min_scale, 0.0f);
  EXPECT_EQ(d.recipe.max_scale, 0.0f);
  EXPECT_EQ(ParseError("", true, "hysteresis=0"),
            "fp16 precision options: hysteresis=0 must be in [1, 1000000] (1 backs "
            "off on every overflow)");
  EXPECT_NE(ParseError("", true, "hysteresis=1.5").find("hysteresis"), std::string::npos);
  EXPECT_NE(ParseError("", true, "min_scale=-1").find("min_scale=-1 must be"),
            std::string::npos);
  EXPECT_NE(ParseError("", true, "min_scale=4,max_scale=2").find("max_scale=2 must be"),
            std::string::npos);
  EXPECT_NE(ParseError("", true, "max_scale=inf").find("max_scale"), std::string::npos);
  EXPECT_NE(ParseError("", true, "hysterisis=2").find("unknown key 'hysterisis'"),
            std::string::npos);
  EXPECT_NE(ParseError("init_scale=1", true, "min_scale=2").find("outside [min_scale"),
            std::string::npos);
  EXPECT_EQ(ParseError("", false, "hysteresis=2"),
            "bf16 precision options: bf16 takes no precision options (got "
            "'hysteresis=2'); hysteresis, min_scale and max_scale are fp16's");
  EXPECT_EQ(MustParse("", false, "").recipe.hysteresis, 1);
}

// DeepSpeed's hysteresis=2 through the scaler: the first overflow of a run is
// skipped without a backoff, and both are counted as skipped.
TEST(LossScalerTest, HysteresisSkipsEveryOverflowButBacksOffFromTheSecond) {
  LossScaler scaler(MustParse("growth_interval=1000", true, "hysteresis=2"));
  UpdateResult r = scaler.Update(true);
  EXPECT_TRUE(r.skip_step);
  EXPECT_EQ(r.new_scale, 65536.0f);
  EXPECT_EQ(scaler.state().hysteresis_tracker, 1);
  r = scaler.Update(true);
  EXPECT_TRUE(r.skip_step);
  EXPECT_EQ(r.new_scale, 32768.0f);
  r = scaler.Update(false);
  EXPECT_FALSE(r.skip_step);
  EXPECT_EQ(scaler.state().hysteresis_tracker, 0);
  r = scaler.Update(true);
  EXPECT_EQ(r.new_scale, 32768.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 3);
  LossScaleRecipeParams recipe;
  ASSERT_TRUE(scaler.Recipe(&recipe));
  EXPECT_EQ(recipe.hysteresis, 2);
  EXPECT_EQ(recipe.growth_interval, 1000);
  // SetState keeps the tracker within [0, hysteresis).
  LossScalerSnapshot st = scaler.state();
  st.hysteresis_tracker = 2;
  EXPECT_FALSE(scaler.SetState(st).ok());
  st.hysteresis_tracker = 1;
  EXPECT_TRUE(scaler.SetState(st).ok());
  // Static and none declare no recipe.
  EXPECT_FALSE(LossScaler(MustParse("mode=static")).Recipe(&recipe));
  EXPECT_FALSE(LossScaler(MustParse("mode=none")).Recipe(&recipe));
}

TEST(LossScalerTest, HandCheckedBackoffAndGrowth) {
  LossScaler scaler(MustParse("growth_interval=3"));
  EXPECT_EQ(scaler.state().scale, 65536.0f);
  // inf, inf, clean, clean, clean (grows), clean.
  const bool pattern[] = {true, true, false, false, false, false};
  const float expected_scale[] = {32768, 16384, 16384, 16384, 32768, 32768};
  const bool expected_skip[] = {true, true, false, false, false, false};
  const int64_t expected_tracker[] = {0, 0, 1, 2, 0, 1};
  for (int i = 0; i < 6; ++i) {
    UpdateResult r = scaler.Update(pattern[i]);
    EXPECT_EQ(r.new_scale, expected_scale[i]) << "step " << i;
    EXPECT_EQ(r.skip_step, expected_skip[i]) << "step " << i;
    EXPECT_EQ(scaler.state().growth_tracker, expected_tracker[i])
        << "step " << i;
  }
  EXPECT_EQ(scaler.state().skipped_steps, 2);
}

TEST(LossScalerTest, MatchesTorchReferenceFrom2Pow20) {
  const float init = 1048576.0f;  // 2^20
  LossScaler scaler(MustParse("init_scale=1048576,growth_interval=3"));
  TorchReference ref{init, 0, 2.0, 0.5, 3};
  // inf at steps 0,1,2, then clean; then one more inf mid-way.
  std::vector<bool> pattern = {true, true, true, false, false, false, false,
                               false, false, true, false, false, false};
  int64_t skipped = 0;
  std::vector<float> scales;
  for (size_t i = 0; i < pattern.size(); ++i) {
    ref.Update(pattern[i]);
    skipped += pattern[i];
    UpdateResult r = scaler.Update(pattern[i]);
    scales.push_back(r.new_scale);
    ASSERT_EQ(r.new_scale, ref.scale) << "step " << i;
    ASSERT_EQ(r.skip_step, pattern[i]) << "step " << i;
    ASSERT_EQ(scaler.state().growth_tracker, ref.growth_tracker)
        << "step " << i;
    ASSERT_EQ(scaler.state().skipped_steps, skipped) << "step " << i;
  }
  // Hand-checked: 2^20 -> 2^19 -> 2^18 -> 2^17, grows at the 3rd and 6th
  // clean step, backs off, then grows after 3 more clean steps.
  const std::vector<float> expected = {
      524288, 262144, 131072, 131072, 131072, 262144, 262144,
      262144, 524288, 262144, 262144, 262144, 524288};
  EXPECT_EQ(scales, expected);
}

TEST(LossScalerTest, RandomPatternsMatchTorchReference) {
  const unsigned seed = std::random_device{}();
  std::printf("seed = %u\n", seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    std::uniform_real_distribution<double> growth(1.01, 4.0);
    std::uniform_real_distribution<double> backoff(0.05, 0.99);
    std::uniform_int_distribution<int> interval(1, 6);
    std::uniform_real_distribution<double> init_exp(-10, 120);
    LossScalerConfig config;
    config.mode = MNT_LOSS_SCALING_DYNAMIC;
    config.init_scale = static_cast<float>(std::exp2(init_exp(rng)));
    config.recipe.growth_factor = growth(rng);
    config.recipe.backoff_factor = backoff(rng);
    config.recipe.growth_interval = interval(rng);
    const double p_inf = std::uniform_real_distribution<double>(0, 0.5)(rng);
    LossScaler scaler(config);
    TorchReference ref{config.init_scale, 0, config.recipe.growth_factor,
                       config.recipe.backoff_factor, config.recipe.growth_interval};
    for (int step = 0; step < 300; ++step) {
      const bool inf = std::bernoulli_distribution(p_inf)(rng);
      ref.Update(inf);
      UpdateResult r = scaler.Update(inf);
      ASSERT_TRUE(std::isfinite(r.new_scale));
      ASSERT_EQ(r.new_scale, ref.scale) << "trial " << trial << " step " << step;
      ASSERT_EQ(scaler.state().growth_tracker, ref.growth_tracker);
    }
  }
}

TEST(LossScalerTest, DefaultIntervalGrowsAtStep2000Not1999) {
  LossScaler scaler(MustParse(""));
  for (int step = 1; step <= 1999; ++step) {
    UpdateResult r = scaler.Update(false);
    ASSERT_EQ(r.new_scale, 65536.0f) << "grew early, at clean step " << step;
    ASSERT_FALSE(r.skip_step);
  }
  EXPECT_EQ(scaler.state().growth_tracker, 1999);
  UpdateResult r = scaler.Update(false);
  EXPECT_EQ(r.new_scale, 131072.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
}

TEST(LossScalerTest, NeverGrowsToInf) {
  LossScaler scaler(MustParse("init_scale=3e38,growth_interval=1"));
  const float start = scaler.state().scale;
  ASSERT_EQ(start, 3e38f);
  for (int i = 0; i < 5; ++i) {
    UpdateResult r = scaler.Update(false);
    EXPECT_EQ(r.new_scale, start);
    EXPECT_TRUE(std::isfinite(r.new_scale));
    EXPECT_EQ(scaler.state().growth_tracker, 0);
  }
  // 1e38 * 2 still fits: growth happens right up to the edge.
  LossScaler edge(MustParse("init_scale=1e38,growth_interval=1"));
  EXPECT_EQ(edge.Update(false).new_scale, 2e38f);
  EXPECT_EQ(edge.Update(false).new_scale, 2e38f);
}

TEST(LossScalerTest, StaticModeSkipsButNeverChangesScale) {
  LossScaler scaler(MustParse("mode=static,init_scale=128,growth_interval=1"));
  const bool pattern[] = {false, true, false, true, true, false};
  int64_t skipped = 0;
  for (bool inf : pattern) {
    UpdateResult r = scaler.Update(inf);
    skipped += inf;
    EXPECT_EQ(r.new_scale, 128.0f);
    EXPECT_EQ(r.skip_step, inf);
  }
  EXPECT_EQ(scaler.state().skipped_steps, skipped);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
}

TEST(LossScalerTest, NoneModeIsScaleOneAndNeverSkips) {
  LossScaler scaler(MustParse("mode=none,init_scale=1024"));
  for (bool inf : {true, false, true}) {
    UpdateResult r = scaler.Update(inf);
    EXPECT_EQ(r.new_scale, 1.0f);
    EXPECT_FALSE(r.skip_step);
  }
  EXPECT_EQ(scaler.state().skipped_steps, 0);
}

TEST(LossScalerTest, StateRoundTripContinuesIdentically) {
  LossScalerConfig config = MustParse("growth_interval=4");
  LossScaler a(config);
  for (bool inf : {true, false, false}) a.Update(inf);
  LossScalerSnapshot saved = a.state();
  EXPECT_EQ(saved.scale, 32768.0f);
  EXPECT_EQ(saved.growth_tracker, 2);
  EXPECT_EQ(saved.skipped_steps, 1);

  LossScaler b(config);
  ASSERT_TRUE(b.SetState(saved).ok());
  for (bool inf : {false, false, true, false}) {
    UpdateResult ra = a.Update(inf);
    UpdateResult rb = b.Update(inf);
    EXPECT_EQ(ra.new_scale, rb.new_scale);
    EXPECT_EQ(ra.skip_step, rb.skip_step);
  }
  EXPECT_EQ(a.state().skipped_steps, b.state().skipped_steps);
  EXPECT_EQ(a.state().growth_tracker, b.state().growth_tracker);
}

TEST(LossScalerTest, SetStateValidates) {
  LossScaler dynamic(MustParse("growth_interval=4"));
  auto bad = [](LossScaler& s, float scale, int64_t tracker, int64_t skipped) {
    LossScalerSnapshot st{scale, tracker, skipped};
    sdk::Status status = s.SetState(st);
    EXPECT_FALSE(status.ok()) << scale << " " << tracker << " " << skipped;
    return status.message();
  };
  EXPECT_NE(bad(dynamic, 0.0f, 0, 0).find("scale=0"), std::string::npos);
  EXPECT_NE(bad(dynamic, -1.0f, 0, 0).find("positive"), std::string::npos);
  EXPECT_NE(bad(dynamic, INFINITY, 0, 0).find("finite"), std::string::npos);
  EXPECT_NE(bad(dynamic, NAN, 0, 0).find("finite"), std::string::npos);
  EXPECT_NE(bad(dynamic, 8.0f, 4, 0).find("growth_tracker=4"),
            std::string::npos);
  EXPECT_NE(bad(dynamic, 8.0f, -1, 0).find("growth_tracker"),
            std::string::npos);
  EXPECT_NE(bad(dynamic, 8.0f, 0, -3).find("skipped_steps"),
            std::string::npos);
  // A rejected state leaves the scaler untouched.
  EXPECT_EQ(dynamic.state().scale, 65536.0f);

  LossScaler fixed(MustParse("mode=static,init_scale=64"));
  EXPECT_NE(bad(fixed, 32.0f, 0, 0).find("mode=static"), std::string::npos);
  EXPECT_TRUE(fixed.SetState({64.0f, 0, 5}).ok());
  LossScaler none(MustParse("mode=none"));
  EXPECT_NE(bad(none, 2.0f, 0, 0).find("mode=none"), std::string::npos);
}

}  // namespace
}  // namespace mnt::precision

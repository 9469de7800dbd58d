// ABI 1.4 device-side loss scaling on the CPU backend: AMP_UPDATE_SCALE
// matches the precision plugins' host LossScaler bit for bit over random
// found_inf sequences (with 1.5's hysteresis, floor and ceiling too), CLIP_COEFFICIENT matches clip_grad_norm_ in float64,
// and ADAMW_STEP's device step counter gives the same bits as params->step.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"
#include "plugins/precisions/loss_scaler.h"

namespace mnt::cpu {
namespace {

using testing::BackendFixture;

class LossScalingTest : public BackendFixture {
 protected:
  float ReadF32(const MNT_Tensor& t) {
    float v;
    EXPECT_TRUE(client().ToHost(&v, t.data, sizeof(v)).ok());
    return v;
  }
  int32_t ReadI32(const MNT_Tensor& t) {
    int32_t v;
    EXPECT_TRUE(client().ToHost(&v, t.data, sizeof(v)).ok());
    return v;
  }
  void WriteF32(const MNT_Tensor& t, float v) {
    ASSERT_TRUE(client().ToDevice(t.data, &v, sizeof(v)).ok());
  }
  static uint32_t Bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
  }
};

TEST_F(LossScalingTest, AmpUpdateScaleMatchesHostLossScalerBitForBit) {
  // Factors exactly representable in fp32 (the op's params are floats; the
  // host scaler keeps doubles), intervals short enough to grow often, initial
  // scales up to near FLT_MAX (growth must stop short of inf) and long inf
  // runs (backoff down to 0).
  const float growth[] = {2.0f, 1.5f, 4.0f, 1.25f};
  const float backoff[] = {0.5f, 0.25f, 0.75f, 0.125f};
  const float init[] = {65536.0f, 0x1p40f, 3.0f, FLT_MAX / 3.0f, 1e-30f};
  for (int trial = 0; trial < 40; ++trial) {
    precision::LossScalerConfig config;
    config.mode = MNT_LOSS_SCALING_DYNAMIC;
    config.recipe.growth_factor = growth[rng()() % 4];
    config.recipe.backoff_factor = backoff[rng()() % 4];
    config.recipe.growth_interval = 1 + rng()() % 6;
    config.init_scale = init[rng()() % 5];
    const double p_inf = (rng()() % 100) / 100.0;
    SCOPED_TRACE(::testing::Message()
                 << "growth " << config.recipe.growth_factor << " backoff "
                 << config.recipe.backoff_factor << " interval " << config.recipe.growth_interval
                 << " init " << config.init_scale << " p_inf " << p_inf);
    precision::LossScaler host(config);

    MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
    MNT_Tensor scale = Upload({config.init_scale}, MNT_DTYPE_F32, {1});
    MNT_Tensor tracker = UploadI32({0}, {1});
    MNT_Tensor inv = Empty(MNT_DTYPE_F32, {1});
    const MNT_AmpUpdateScaleParams p{
        MNT_AmpUpdateScaleParams_STRUCT_SIZE, static_cast<float>(config.recipe.growth_factor),
        static_cast<float>(config.recipe.backoff_factor),
        static_cast<int32_t>(config.recipe.growth_interval)};
    std::bernoulli_distribution inf(p_inf);
    for (int step = 0; step < 300; ++step) {
      const bool found_inf = inf(rng());
      WriteF32(found, found_inf ? 1.0f : 0.0f);
      ASSERT_TRUE(Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p).ok());
      const precision::UpdateResult want = host.Update(found_inf);
      ASSERT_EQ(Bits(ReadF32(scale)), Bits(want.new_scale)) << "step " << step;
      ASSERT_EQ(ReadI32(tracker), host.state().growth_tracker) << "step " << step;
      ASSERT_FALSE(std::isinf(ReadF32(scale)));
      ASSERT_EQ(Bits(ReadF32(inv)),
                Bits(static_cast<float>(1.0 / static_cast<double>(want.new_scale))));
    }
  }
}

// ABI 1.5: the whole recipe (hysteresis, floor, ceiling) with the 4th output
// gives the host scaler's bits, parsed from the fp16 plugin's own options.
TEST_F(LossScalingTest, AmpUpdateScaleWithHysteresisMatchesHostLossScaler) {
  const char* precision_options[] = {
      "hysteresis=2", "hysteresis=3,min_scale=4", "max_scale=1e6",
      "hysteresis=2,min_scale=0.5,max_scale=70000", "min_scale=1e9"};
  for (int trial = 0; trial < 40; ++trial) {
    const char* options = precision_options[trial % 5];
    const std::string scaler_options =
        std::string("growth_interval=") + std::to_string(1 + rng()() % 4) +
        (trial % 5 == 4 ? ",init_scale=4e9" : "");
    precision::LossScalerConfig config;
    ASSERT_TRUE(precision::ParseLossScalerConfig(scaler_options.c_str(), options, "fp16",
                                                 MNT_LOSS_SCALING_DYNAMIC, true, &config)
                    .ok());
    const double p_inf = (rng()() % 100) / 100.0;
    SCOPED_TRACE(::testing::Message() << options << " " << scaler_options << " p_inf "
                                      << p_inf);
    precision::LossScaler host(config);
    MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
    MNT_Tensor scale = Upload({config.init_scale}, MNT_DTYPE_F32, {1});
    MNT_Tensor tracker = UploadI32({0}, {1});
    MNT_Tensor hysteresis = UploadI32({0}, {1});
    MNT_Tensor inv = Empty(MNT_DTYPE_F32, {1});
    const MNT_AmpUpdateScaleParams p{MNT_AmpUpdateScaleParams_STRUCT_SIZE,
                                     static_cast<float>(config.recipe.growth_factor),
                                     static_cast<float>(config.recipe.backoff_factor),
                                     static_cast<int32_t>(config.recipe.growth_interval),
                                     config.recipe.hysteresis,
                                     config.recipe.min_scale,
                                     config.recipe.max_scale};
    std::bernoulli_distribution inf(p_inf);
    int backoffs = 0;
    for (int step = 0; step < 300; ++step) {
      const bool found_inf = inf(rng());
      const float before = ReadF32(scale);
      WriteF32(found, found_inf ? 1.0f : 0.0f);
      ASSERT_TRUE(
          Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv, hysteresis}, &p).ok());
      const precision::UpdateResult want = host.Update(found_inf);
      ASSERT_EQ(Bits(ReadF32(scale)), Bits(want.new_scale)) << "step " << step;
      ASSERT_EQ(ReadI32(tracker), host.state().growth_tracker) << "step " << step;
      ASSERT_EQ(ReadI32(hysteresis), host.state().hysteresis_tracker) << "step " << step;
      ASSERT_GE(ReadF32(scale), config.recipe.min_scale);
      if (config.recipe.max_scale > 0) {
        ASSERT_LE(ReadF32(scale), config.recipe.max_scale);
      }
      backoffs += ReadF32(scale) < before;
    }
    if (p_inf > 0.3) {
      EXPECT_GT(backoffs, 0) << "the trial never backed off";
    }
  }
}

TEST_F(LossScalingTest, AmpUpdateScaleRefusesBadParamsAndOperands) {
  MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor scale = Upload({2.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor tracker = UploadI32({0}, {1});
  MNT_Tensor inv = Empty(MNT_DTYPE_F32, {1});
  MNT_AmpUpdateScaleParams p{MNT_AmpUpdateScaleParams_STRUCT_SIZE, 2.0f, 0.5f, 0};
  sdk::Status s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p);
  EXPECT_EQ(s.message(), "AMP_UPDATE_SCALE: growth_interval 0 must be >= 1");
  p.growth_interval = 10;
  p.backoff_factor = 1.0f;
  s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p);
  EXPECT_EQ(s.message(), "AMP_UPDATE_SCALE: backoff_factor 1 must be in (0, 1)");
  p.backoff_factor = 0.5f;
  p.growth_factor = 1.0f;
  s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p);
  EXPECT_EQ(s.message(), "AMP_UPDATE_SCALE: growth_factor 1 must be finite and > 1");
  p.growth_factor = 2.0f;
  MNT_Tensor f32_tracker = Upload({0.0}, MNT_DTYPE_F32, {1});
  s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, f32_tracker, inv}, &p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out[1] growth_tracker"), std::string::npos) << s.message();
  s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p).ok());
  // 1.5: hysteresis needs its tracker; floor and ceiling must be ordered.
  p.hysteresis = 2;
  s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p);
  EXPECT_EQ(s.message(),
            "AMP_UPDATE_SCALE: hysteresis 2 needs out[3] hysteresis_tracker I32[1]");
  p.hysteresis = 1;
  p.min_scale = 8.0f;
  p.max_scale = 4.0f;
  s = Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &p);
  EXPECT_EQ(s.message(),
            "AMP_UPDATE_SCALE: max_scale 4 must be 0 (no ceiling) or finite and >= "
            "min_scale 8");
  // A 1.4 caller's params (no hysteresis, floor or ceiling) still run.
  MNT_AmpUpdateScaleParams old = p;
  old.struct_size = MNT_AmpUpdateScaleParams_STRUCT_SIZE_1_4;
  EXPECT_TRUE(Run(MNT_OP_AMP_UPDATE_SCALE, {found}, {scale, tracker, inv}, &old).ok());
}

TEST_F(LossScalingTest, ClipCoefficientMatchesFloat64) {
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t n = 1 + rng()() % 300;
    const std::vector<double> g = Stored(Random(n, -3.0, 3.0), MNT_DTYPE_F32);
    MNT_Tensor tg = Upload(g, MNT_DTYPE_F32, {n});
    MNT_Tensor norm_sq = Empty(MNT_DTYPE_F32, {1});
    MNT_Tensor mult = Empty(MNT_DTYPE_F32, {1});
    ASSERT_TRUE(Run(MNT_OP_GLOBAL_NORM_SQUARED, {tg}, {norm_sq}).ok());
    double sum = 0;
    for (double v : g) sum += v * v;
    const double norm = std::sqrt(sum);
    const float max_norm = static_cast<float>(Random(1, 0.0, 2.0 * norm)[0]);
    const MNT_ClipCoefficientParams p{MNT_ClipCoefficientParams_STRUCT_SIZE, max_norm};
    ASSERT_TRUE(Run(MNT_OP_CLIP_COEFFICIENT, {norm_sq}, {mult}, &p).ok());
    const double want = norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
    const float got = ReadF32(mult);
    ASSERT_FALSE(std::isnan(got));
    EXPECT_NEAR(got, want, 1e-5 * want) << "norm " << norm << " max_norm " << max_norm;
  }
}

TEST_F(LossScalingTest, ClipCoefficientIsOneOnOverflowOrWithoutClipping) {
  MNT_Tensor norm_sq = Upload({100.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor found = Upload({1.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor mult = Empty(MNT_DTYPE_F32, {1});
  MNT_ClipCoefficientParams p{MNT_ClipCoefficientParams_STRUCT_SIZE, 1.0f};
  ASSERT_TRUE(Run(MNT_OP_CLIP_COEFFICIENT, {norm_sq, found}, {mult}, &p).ok());
  EXPECT_EQ(ReadF32(mult), 1.0f);
  WriteF32(found, 0.0f);
  ASSERT_TRUE(Run(MNT_OP_CLIP_COEFFICIENT, {norm_sq, found}, {mult}, &p).ok());
  EXPECT_EQ(ReadF32(mult), static_cast<float>(1.0 / (10.0 + 1e-6)));
  p.max_norm = 0.0f;
  ASSERT_TRUE(Run(MNT_OP_CLIP_COEFFICIENT, {norm_sq}, {mult}, &p).ok());
  EXPECT_EQ(ReadF32(mult), 1.0f);
  MNT_Tensor wrong = Upload({1.0, 2.0}, MNT_DTYPE_F32, {2});
  const sdk::Status s = Run(MNT_OP_CLIP_COEFFICIENT, {wrong}, {mult}, &p);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("CLIP_COEFFICIENT: in[0] norm_squared", 0), 0u) << s.message();
}

TEST_F(LossScalingTest, AdamWDeviceCounterMatchesHostStepAndCountsAppliedSteps) {
  constexpr int64_t kN = 61;
  const std::vector<double> w0 = Stored(Random(kN), MNT_DTYPE_F32);
  // Two identical parameter sets: one stepped with params->step from the
  // host, one with the device counter.
  MNT_Tensor w_host = Upload(w0, MNT_DTYPE_F32, {kN}), w_dev = Upload(w0, MNT_DTYPE_F32, {kN});
  std::vector<double> zeros(kN, 0.0);
  MNT_Tensor m_host = Upload(zeros, MNT_DTYPE_F32, {kN}), v_host = Upload(zeros, MNT_DTYPE_F32, {kN});
  MNT_Tensor m_dev = Upload(zeros, MNT_DTYPE_F32, {kN}), v_dev = Upload(zeros, MNT_DTYPE_F32, {kN});
  MNT_Tensor counter = UploadI32({0}, {1});
  MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor mult = Upload({0.75}, MNT_DTYPE_F32, {1});
  int64_t applied = 0;
  std::bernoulli_distribution inf(0.3);
  for (int step = 0; step < 40; ++step) {
    const bool skip = inf(rng());
    WriteF32(found, skip ? 1.0f : 0.0f);
    MNT_Tensor g = Upload(Random(kN), MNT_DTYPE_F32, {kN});
    MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f,
                      applied + 1};
    ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g, found, mult}, {w_host, m_host, v_host}, &p).ok());
    p.step = 12345;  // ignored when the counter is given
    ASSERT_TRUE(
        Run(MNT_OP_ADAMW_STEP, {g, found, mult, counter}, {w_dev, m_dev, v_dev}, &p).ok());
    if (!skip) ++applied;
    ASSERT_EQ(ReadI32(counter), applied) << "step " << step;
  }
  EXPECT_GT(applied, 0);
  EXPECT_EQ(Bytes(w_host), Bytes(w_dev));
  EXPECT_EQ(Bytes(m_host), Bytes(m_dev));
  EXPECT_EQ(Bytes(v_host), Bytes(v_dev));
  EXPECT_NE(Bytes(w_host), Bytes(Upload(w0, MNT_DTYPE_F32, {kN})));

  // A negative counter is refused with one line.
  MNT_Tensor bad = UploadI32({-1}, {1});
  MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 0};
  const sdk::Status s = Run(MNT_OP_ADAMW_STEP,
                            {Upload(Random(kN), MNT_DTYPE_F32, {kN}), found, mult, bad},
                            {w_dev, m_dev, v_dev}, &p);
  EXPECT_EQ(s.message(),
            "ADAMW_STEP: in[3] step_counter holds -1, expected 0..2147483646 applied steps");
}

}  // namespace
}  // namespace mnt::cpu

// fp16 loss scaling on the device: an fp16 mixed-precision optimizer step
// (zero found_inf, fused non-finite check + unscale into fp32 master grads,
// AdamW reading found_inf on the device) run for several steps with an
// overflow injected at step k. Step k must leave master weights, the fp16
// working copy and both Adam moments bit-identical; the other steps must
// change them and track the CPU backend running the same sequence.
// ABI 1.4: AMP_UPDATE_SCALE and CLIP_COEFFICIENT give the CPU backend's bits,
// and ADAMW_STEP with the device step counter gives the same bits as with the
// host's step and counts applied steps only.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::AllClose;
using testing::DualBackend;

TEST(CudaLossScalingTest, InjectedOverflowSkipsExactlyThatStep) {
  MNT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(testing::FreshSeed());
  DualBackend d;
  d.Init();
  const int64_t n = 4097;
  const int kSteps = 6, kOverflowStep = 3;
  const float scale = 65536.0f;
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w0(n);
  for (float& e : w0) e = dist(rng);
  auto master = d.Upload(w0, MNT_DTYPE_F32, {n});
  auto working = d.Upload(w0, MNT_DTYPE_F16, {n});
  auto m = d.Upload(std::vector<float>(n, 0.0f), MNT_DTYPE_F32, {n});
  auto v = d.Upload(std::vector<float>(n, 0.0f), MNT_DTYPE_F32, {n});
  auto master_grad = d.Poisoned(MNT_DTYPE_F32, {n});
  auto found = d.Poisoned(MNT_DTYPE_F32, {1});
  auto inv_scale = d.Upload({1.0f / scale}, MNT_DTYPE_F32, {1});
  int64_t applied = 0;
  for (int step = 1; step <= kSteps; ++step) {
    std::vector<float> g(n);
    for (float& e : g) e = dist(rng) * 1e-3f * scale;  // scaled fp16 gradient
    if (step == kOverflowStep) g[n / 2] = INFINITY;
    auto grad16 = d.Upload(g, MNT_DTYPE_F16, {n});
    const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
    ASSERT_TRUE(d.RunBoth(MNT_OP_FILL, {}, {found.get()}, &zero).ok());
    ASSERT_TRUE(d.RunBoth(MNT_OP_NONFINITE_CHECK_UNSCALE, {inv_scale.get(), grad16.get()},
                          {found.get(), master_grad.get()})
                    .ok());
    const auto before = {d.Bytes(*master, true), d.Bytes(*working, true), d.Bytes(*m, true),
                         d.Bytes(*v, true)};
    const bool overflow = step == kOverflowStep;
    // The trainer advances Adam's step only for applied steps.
    const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f,
                            applied + 1};
    ASSERT_TRUE(d.RunBoth(MNT_OP_ADAMW_STEP, {master_grad.get(), found.get()},
                          {master.get(), m.get(), v.get(), working.get()}, &p)
                    .ok());
    EXPECT_EQ(d.Download(*found, true), std::vector<float>{overflow ? 1.0f : 0.0f}) << step;
    const auto after = {d.Bytes(*master, true), d.Bytes(*working, true), d.Bytes(*m, true),
                        d.Bytes(*v, true)};
    auto b = before.begin();
    for (auto a = after.begin(); a != after.end(); ++a, ++b) {
      if (overflow) {
        EXPECT_EQ(*a, *b) << "step " << step << " was skipped but state changed";
      } else {
        EXPECT_NE(*a, *b) << "step " << step << " was applied but state did not change";
      }
    }
    if (!overflow) ++applied;
    EXPECT_TRUE(AllClose(d.Download(*master, true), d.Download(*master, false), 1e-5, 1e-6));
    EXPECT_TRUE(AllClose(d.Download(*working, true), d.Download(*working, false), 2e-3, 1e-6));
  }
  EXPECT_EQ(applied, kSteps - 1);
}

TEST(CudaLossScalingTest, AmpUpdateScaleMatchesCpuBitForBit) {
  MNT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(testing::FreshSeed());
  DualBackend d;
  d.Init();
  const float inits[] = {65536.0f, 0x1p40f, 3.0f, FLT_MAX / 3.0f};
  const float growth[] = {2.0f, 1.5f, 4.0f};
  const float backoff[] = {0.5f, 0.25f, 0.75f};
  for (int trial = 0; trial < 12; ++trial) {
    const MNT_AmpUpdateScaleParams p{MNT_AmpUpdateScaleParams_STRUCT_SIZE,
                                     growth[rng() % 3], backoff[rng() % 3],
                                     static_cast<int32_t>(1 + rng() % 5)};
    auto scale = d.Upload({inits[trial % 4]}, MNT_DTYPE_F32, {1});
    auto tracker = d.UploadI32({0}, {1});
    auto inv = d.Poisoned(MNT_DTYPE_F32, {1});
    std::bernoulli_distribution inf((rng() % 100) / 100.0);
    for (int step = 0; step < 60; ++step) {
      auto found = d.Upload({inf(rng) ? 1.0f : 0.0f}, MNT_DTYPE_F32, {1});
      ASSERT_TRUE(d.RunBoth(MNT_OP_AMP_UPDATE_SCALE, {found.get()},
                            {scale.get(), tracker.get(), inv.get()}, &p)
                      .ok());
      ASSERT_EQ(d.Bytes(*scale, true), d.Bytes(*scale, false)) << trial << "/" << step;
      ASSERT_EQ(d.Bytes(*tracker, true), d.Bytes(*tracker, false)) << trial << "/" << step;
      ASSERT_EQ(d.Bytes(*inv, true), d.Bytes(*inv, false)) << trial << "/" << step;
      ASSERT_FALSE(std::isinf(d.Download(*scale, true)[0]));
    }
  }
}

// ABI 1.5: hysteresis, floor and ceiling with the 4th output.
TEST(CudaLossScalingTest, AmpUpdateScaleWithHysteresisMatchesCpuBitForBit) {
  MNT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(testing::FreshSeed());
  DualBackend d;
  d.Init();
  for (int trial = 0; trial < 12; ++trial) {
    const MNT_AmpUpdateScaleParams p{MNT_AmpUpdateScaleParams_STRUCT_SIZE,
                                     2.0f,
                                     0.5f,
                                     static_cast<int32_t>(1 + rng() % 5),
                                     static_cast<int32_t>(1 + rng() % 4),
                                     trial % 2 ? 256.0f : 0.0f,
                                     trial % 3 ? 1048576.0f : 0.0f};
    auto scale = d.Upload({65536.0f}, MNT_DTYPE_F32, {1});
    auto tracker = d.UploadI32({0}, {1});
    auto hysteresis = d.UploadI32({0}, {1});
    auto inv = d.Poisoned(MNT_DTYPE_F32, {1});
    std::bernoulli_distribution inf((rng() % 100) / 100.0);
    for (int step = 0; step < 60; ++step) {
      auto found = d.Upload({inf(rng) ? 1.0f : 0.0f}, MNT_DTYPE_F32, {1});
      ASSERT_TRUE(d.RunBoth(MNT_OP_AMP_UPDATE_SCALE, {found.get()},
                            {scale.get(), tracker.get(), inv.get(), hysteresis.get()}, &p)
                      .ok());
      ASSERT_EQ(d.Bytes(*scale, true), d.Bytes(*scale, false)) << trial << "/" << step;
      ASSERT_EQ(d.Bytes(*tracker, true), d.Bytes(*tracker, false)) << trial << "/" << step;
      ASSERT_EQ(d.Bytes(*hysteresis, true), d.Bytes(*hysteresis, false))
          << trial << "/" << step;
      ASSERT_EQ(d.Bytes(*inv, true), d.Bytes(*inv, false)) << trial << "/" << step;
    }
  }
}

TEST(CudaLossScalingTest, ClipCoefficientMatchesCpuBitForBit) {
  MNT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(testing::FreshSeed());
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  DualBackend d;
  d.Init();
  auto mult = d.Poisoned(MNT_DTYPE_F32, {1});
  for (int i = 0; i < 50; ++i) {
    auto norm_sq = d.Upload({u(rng) * u(rng)}, MNT_DTYPE_F32, {1});
    auto found = d.Upload({i % 7 == 0 ? 1.0f : 0.0f}, MNT_DTYPE_F32, {1});
    const MNT_ClipCoefficientParams p{MNT_ClipCoefficientParams_STRUCT_SIZE,
                                      i % 11 == 0 ? 0.0f : u(rng)};
    ASSERT_TRUE(
        d.RunBoth(MNT_OP_CLIP_COEFFICIENT, {norm_sq.get(), found.get()}, {mult.get()}, &p).ok());
    EXPECT_EQ(d.Bytes(*mult, true), d.Bytes(*mult, false)) << i;
    EXPECT_FALSE(std::isnan(d.Download(*mult, true)[0]));
  }
}

TEST(CudaLossScalingTest, AdamWDeviceCounterMatchesHostStep) {
  MNT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(testing::FreshSeed());
  std::normal_distribution<float> dist(0.0f, 1.0f);
  DualBackend d;
  d.Init();
  const int64_t n = 3001;
  std::vector<float> w0(n);
  for (float& e : w0) e = dist(rng);
  const std::vector<float> zeros(n, 0.0f);
  auto w_host = d.Upload(w0, MNT_DTYPE_F32, {n}), w_dev = d.Upload(w0, MNT_DTYPE_F32, {n});
  auto m_host = d.Upload(zeros, MNT_DTYPE_F32, {n}), m_dev = d.Upload(zeros, MNT_DTYPE_F32, {n});
  auto v_host = d.Upload(zeros, MNT_DTYPE_F32, {n}), v_dev = d.Upload(zeros, MNT_DTYPE_F32, {n});
  auto counter = d.UploadI32({0}, {1});
  auto mult = d.Upload({0.5f}, MNT_DTYPE_F32, {1});
  std::bernoulli_distribution inf(0.3);
  int32_t applied = 0;
  for (int step = 0; step < 12; ++step) {
    const bool skip = inf(rng);
    auto found = d.Upload({skip ? 1.0f : 0.0f}, MNT_DTYPE_F32, {1});
    std::vector<float> g(n);
    for (float& e : g) e = dist(rng);
    auto grad = d.Upload(g, MNT_DTYPE_F32, {n});
    MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f,
                      applied + 1};
    ASSERT_TRUE(d.RunCuda(MNT_OP_ADAMW_STEP, {grad.get(), found.get(), mult.get()},
                          {w_host.get(), m_host.get(), v_host.get()}, &p)
                    .ok());
    p.step = 999;  // ignored with the counter
    ASSERT_TRUE(d.RunBoth(MNT_OP_ADAMW_STEP,
                          {grad.get(), found.get(), mult.get(), counter.get()},
                          {w_dev.get(), m_dev.get(), v_dev.get()}, &p)
                    .ok());
    if (!skip) ++applied;
    std::vector<uint8_t> want(sizeof(int32_t));
    std::memcpy(want.data(), &applied, sizeof(applied));
    ASSERT_EQ(d.Bytes(*counter, true), want) << step;
    ASSERT_EQ(d.Bytes(*counter, false), want) << step;
  }
  EXPECT_EQ(d.Bytes(*w_host, true), d.Bytes(*w_dev, true));
  EXPECT_EQ(d.Bytes(*m_host, true), d.Bytes(*m_dev, true));
  EXPECT_EQ(d.Bytes(*v_host, true), d.Bytes(*v_dev, true));
  EXPECT_TRUE(AllClose(d.Download(*w_dev, true), d.Download(*w_dev, false), 1e-5, 1e-6));
}

}  // namespace
}  // namespace mnt::cuda

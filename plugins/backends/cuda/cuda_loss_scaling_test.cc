// fp16 loss scaling on the device: an fp16 mixed-precision optimizer step
// (zero found_inf, fused non-finite check + unscale into fp32 master grads,
// AdamW reading found_inf on the device) run for several steps with an
// overflow injected at step k. Step k must leave master weights, the fp16
// working copy and both Adam moments bit-identical; the other steps must
// change them and track the CPU backend running the same sequence.
#include <cmath>
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

}  // namespace
}  // namespace mnt::cuda

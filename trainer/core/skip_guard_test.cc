#include "trainer/core/skip_guard.h"

#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace mnt::trainer {
namespace {

StepMetrics At(int64_t step, int64_t skipped_total, bool skipped, double scale) {
  StepMetrics m;
  m.step = step;
  m.skipped_steps = skipped_total;
  m.skipped = skipped;
  m.loss_scale = scale;
  return m;
}

TEST(SkipGuardTest, StaticScaleSkippingEveryStepIsAnError) {
  SkipGuard guard(0, 0, /*static_scale=*/true);
  for (int64_t step = 1; step < SkipGuard::kStaticSteps; ++step) {
    auto r = guard.Observe(At(step, step, true, 1e30));
    ASSERT_TRUE(r.ok()) << step;
  }
  auto r = guard.Observe(At(SkipGuard::kStaticSteps, SkipGuard::kStaticSteps, true, 1e30));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "every one of the first 10 steps"));
  EXPECT_TRUE(absl::StrContains(r.status().message(), "--init_scale"));
  EXPECT_TRUE(absl::StrContains(r.status().message(), "--loss_scale_mode=dynamic"));
}

// Ten skipped steps at a static `scale` through `guard`: the stop.
absl::Status StopAt(SkipGuard& guard, double scale) {
  for (int64_t step = 1; step <= SkipGuard::kStaticSteps; ++step) {
    auto r = guard.Observe(At(step, step, true, scale));
    if (!r.ok()) return r.status();
  }
  return absl::OkStatus();
}

TEST(SkipGuardTest, TheStaticStopNamesTheScaleTheFinderMeasured) {
  SkipGuard guard(0, 0, true);
  std::vector<double> asked;
  guard.set_scale_finder([&](double failing) -> absl::StatusOr<SkipGuard::ScaleAdvice> {
    asked.push_back(failing);
    return SkipGuard::ScaleAdvice{131072, 16384};
  });
  const absl::Status s = StopAt(guard, 1e12);
  ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(asked, std::vector<double>{1e12});  // once, with the scale that failed
  EXPECT_TRUE(absl::StrContains(s.message(), "the static loss scale 1e+12 makes")) << s;
  EXPECT_TRUE(absl::StrContains(
      s.message(), "Use --init_scale=16384 (measured on step 10's batch: its gradients are "
                   "finite up to a scale of 131072; 8x below that"))
      << s;
  EXPECT_FALSE(absl::StrContains(s.message(), "65536")) << s;
}

TEST(SkipGuardTest, TheStaticStopSaysWhenNoScaleHelpsOrTheSearchFailed) {
  SkipGuard none(0, 0, true);
  none.set_scale_finder(
      [](double) -> absl::StatusOr<SkipGuard::ScaleAdvice> { return SkipGuard::ScaleAdvice{}; });
  absl::Status s = StopAt(none, 1024);
  EXPECT_TRUE(absl::StrContains(s.message(), "overflow at every scale down to 2^-24")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "--debug_overflow")) << s;
  EXPECT_FALSE(absl::StrContains(s.message(), "Use --init_scale")) << s;

  SkipGuard failed(0, 0, true);
  failed.set_scale_finder([](double) -> absl::StatusOr<SkipGuard::ScaleAdvice> {
    return absl::InternalError("model backward: boom");
  });
  s = StopAt(failed, 1024);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "measuring one that works failed: model backward: "
                                             "boom"))
      << s;
}

// "Now" is after the step's backoff: what the next step and the final
// report use, not the scale the skipped step used.
TEST(SkipGuardTest, TheWarningGivesTheScaleAfterTheStep) {
  SkipGuard guard(0, 0, false);
  std::string warning;
  for (int64_t step = 1; step <= SkipGuard::kStretch; ++step) {
    StepMetrics m = At(step, step, true, std::ldexp(1e12, 1 - step));
    m.next_loss_scale = std::ldexp(1e12, -step);
    warning = *guard.Observe(m);
  }
  EXPECT_TRUE(absl::StrContains(warning, "the loss scale is now 953674.")) << warning;
}

TEST(SkipGuardTest, StaticScaleWithOneAppliedStepIsNotAnError) {
  SkipGuard guard(0, 0, true);
  ASSERT_EQ(*guard.Observe(At(1, 0, false, 1024)), "");
  for (int64_t step = 2; step <= 40; ++step) {
    EXPECT_TRUE(guard.Observe(At(step, step - 1, true, 1024)).ok()) << step;
  }
}

TEST(SkipGuardTest, DynamicStretchWarnsOnceThenAtFourTimesTheLength) {
  SkipGuard guard(0, 0, false);
  int warnings = 0;
  std::string first;
  for (int64_t step = 1; step <= 100; ++step) {
    auto r = guard.Observe(At(step, step, true, std::ldexp(1.0, 16 - step)));
    ASSERT_TRUE(r.ok());
    if (!r->empty()) {
      ++warnings;
      if (first.empty()) first = *r;
      EXPECT_TRUE(step == SkipGuard::kStretch || step == 4 * SkipGuard::kStretch) << step;
    }
  }
  EXPECT_EQ(warnings, 2);
  EXPECT_TRUE(absl::StrContains(first, "all 20 steps so far were skipped")) << first;
}

TEST(SkipGuardTest, TheWarningTellsAFloorFromAnOverflow) {
  const auto warning_at = [](double scale, double min_scale) {
    SkipGuard guard(0, 0, false, min_scale);
    std::string w;
    for (int64_t step = 1; step <= SkipGuard::kStretch; ++step) {
      w = *guard.Observe(At(step, step, true, scale));
    }
    return w;
  };
  // Held at a plugin's floor: the floor is named, not the model blamed.
  std::string w = warning_at(64, 64);
  EXPECT_TRUE(absl::StrContains(w, "sits at the precision's floor (min_scale=64)")) << w;
  EXPECT_FALSE(absl::StrContains(w, "even unscaled")) << w;
  // Still backing off from a large scale.
  w = warning_at(1024, 0);
  EXPECT_TRUE(absl::StrContains(w, "still backing off")) << w;
  // Down to 1 (no floor): then the model or the loss is at fault.
  w = warning_at(1, 0);
  EXPECT_TRUE(absl::StrContains(w, "overflow even unscaled")) << w;
}

TEST(SkipGuardTest, StretchAfterProgressNamesItsSteps) {
  SkipGuard guard(100, 3, false);  // resumed at step 100 with 3 skips before
  ASSERT_EQ(*guard.Observe(At(110, 3, false, 65536)), "");
  std::string warning;
  for (int64_t step = 111; step <= 130; ++step) {
    warning = *guard.Observe(At(step, 3 + (step - 110), true, 2.0));
  }
  EXPECT_TRUE(absl::StrContains(warning, "the last 20 steps in a row (steps 111-130)")) << warning;
  // An applied step ends the stretch; the next one warns afresh.
  EXPECT_EQ(*guard.Observe(At(131, 23, false, 1.0)), "");
}

TEST(SkipGuardTest, SparseObservationsCountWholeSkippedIntervals) {
  // Device-side scaling: metrics every 10 steps only.
  SkipGuard guard(0, 0, false);
  EXPECT_EQ(*guard.Observe(At(10, 10, true, 64)), "");
  auto r = guard.Observe(At(20, 20, true, 0.0625));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(absl::StrContains(*r, "all 20 steps so far")) << *r;
  // Occasional skips never warn.
  SkipGuard calm(0, 0, false);
  for (int64_t step = 10; step <= 1000; step += 10) {
    EXPECT_EQ(*calm.Observe(At(step, step / 10, step % 20 == 0, 65536)), "");
  }
}

}  // namespace
}  // namespace mnt::trainer

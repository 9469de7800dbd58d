// Watches the steps fp16 loss scaling skips, so that a run that learns
// nothing says so while it runs instead of exiting 0 at chance accuracy:
//   - a long unbroken stretch of skipped steps (every step so far, or
//     kStretch in a row) is a warning, repeated as the stretch grows 4x;
//   - a static loss scale that skips every one of the first kStaticSteps
//     steps is an error with advice (a static scale never recovers): the
//     scale to use instead, measured by the finder the trainer sets
//     (StaticScaleSearch, on the stopped step's batch).
// It works from the metrics the trainer reads (each step on the host path,
// the steps a sink asks for with device-side scaling): skipped_steps is
// cumulative, so an interval whose every step was skipped is still seen.
#ifndef MANTISSA_TRAINER_CORE_SKIP_GUARD_H_
#define MANTISSA_TRAINER_CORE_SKIP_GUARD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "trainer/core/metrics.h"

namespace mnt::trainer {

class SkipGuard {
 public:
  static constexpr int64_t kStretch = 20;
  static constexpr int64_t kStaticSteps = 10;

  // `start_step`: the step training (re)starts from; `skipped_before`: the
  // skipped-step count then (a resumed run's); `static_scale`: the scale
  // never changes (--loss_scale_mode=static).
  // `min_scale`: the recipe's floor (0: none), for the warning's diagnosis.
  SkipGuard(int64_t start_step, int64_t skipped_before, bool static_scale,
            double min_scale = 0)
      : last_step_(start_step), last_skipped_(skipped_before),
        start_step_(start_step), static_scale_(static_scale), min_scale_(min_scale) {}

  // What a finder measured below a static scale that overflowed.
  struct ScaleAdvice {
    double largest_finite = 0;  // the largest scale with finite gradients (0: none)
    double suggested = 0;       // what to use: below it, with headroom
  };
  using ScaleFinder = std::function<absl::StatusOr<ScaleAdvice>(double failing_scale)>;
  void set_scale_finder(ScaleFinder finder) { find_scale_ = std::move(finder); }

  // A warning line for the console (or "") after the metrics of step
  // m.step; an error (FailedPrecondition) when the run should stop.
  absl::StatusOr<std::string> Observe(const StepMetrics& m);

 private:
  // The static-scale error: which scale to use instead, as the finder
  // measured it.
  absl::Status StaticScaleError(const StepMetrics& m);

  int64_t last_step_, last_skipped_, start_step_;
  bool static_scale_;
  double min_scale_;
  int64_t stretch_ = 0;         // skipped steps in a row up to last_step_
  int64_t next_warning_ = kStretch;
  ScaleFinder find_scale_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_SKIP_GUARD_H_

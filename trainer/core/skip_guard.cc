#include "trainer/core/skip_guard.h"

#include "absl/strings/str_format.h"

namespace mnt::trainer {

absl::StatusOr<std::string> SkipGuard::Observe(const StepMetrics& m) {
  const int64_t steps = m.step - last_step_;
  const int64_t skipped = m.skipped_steps - last_skipped_;
  if (steps <= 0) return std::string();
  if (skipped >= steps) {
    stretch_ += steps;
  } else {
    // Some step in the interval was applied; only the last one is known.
    stretch_ = m.skipped ? 1 : 0;
    next_warning_ = kStretch;
  }
  last_step_ = m.step;
  last_skipped_ = m.skipped_steps;

  const bool every_step = stretch_ == m.step - start_step_;
  if (static_scale_ && every_step && stretch_ >= kStaticSteps) return StaticScaleError(m);
  if (stretch_ < next_warning_) return std::string();
  next_warning_ = stretch_ * 4;
  const std::string which =
      every_step ? absl::StrFormat("all %d steps so far", stretch_)
                 : absl::StrFormat("the last %d steps in a row (steps %d-%d)", stretch_,
                                   m.step - stretch_ + 1, m.step);
  // "Now": after this step's backoff, the scale the next step uses and the
  // final report would give (the step's own scale is m.loss_scale).
  const double now = m.next_loss_scale > 0 ? m.next_loss_scale : m.loss_scale;
  // Why, as far as the scale tells: held up by the recipe's floor, still
  // backing off, or overflowing with no scale left to take back.
  std::string diagnosis;
  if (min_scale_ > 1 && now <= min_scale_) {
    diagnosis = absl::StrFormat(
        "The scale sits at the precision's floor (min_scale=%g) and cannot back off "
        "further: lower the floor (--precision_options=min_scale=...), or the gradients "
        "overflow even at it",
        min_scale_);
  } else if (now > 1) {
    diagnosis =
        "The scale is still backing off; if the skips go on once it is at 1, the model or "
        "loss produces inf/NaN";
  } else {
    diagnosis =
        "The gradients overflow even unscaled: the model or loss produces inf/NaN (a lower "
        "--lr, --clip_grad_norm or --precision=bf16 may help)";
  }
  return absl::StrFormat(
      "warning: %s were skipped (non-finite gradients); the loss scale is now %g. %s", which,
      now, diagnosis);
}

absl::Status SkipGuard::StaticScaleError(const StepMetrics& m) {
  const std::string what = absl::StrFormat(
      "every one of the first %d steps was skipped: the static loss scale %g makes the fp16 "
      "gradients overflow (inf/NaN), so nothing is learned",
      stretch_, m.loss_scale);
  constexpr char kDynamic[] = "--loss_scale_mode=dynamic, which backs off by itself";
  if (!find_scale_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s. Lower --init_scale (gradients must stay below 65504 after scaling), or use %s",
        what, kDynamic));
  }
  auto found = find_scale_(m.loss_scale);
  if (!found.ok()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s. Lower --init_scale (measuring one that works failed: %s), or use %s", what,
        found.status().message(), kDynamic));
  }
  if (found->largest_finite <= 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s; the gradients of step %d's batch overflow at every scale down to 2^-24, so the "
        "model or its loss makes inf/NaN and no loss scale helps: check the data and the "
        "model (--debug_overflow traces the op that makes it)",
        what, m.step));
  }
  // %.17g: a power of two written out exactly, so the flag gets that scale.
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s. Use --init_scale=%.17g (measured on step %d's batch: its gradients are finite up "
      "to a scale of %.17g; %gx below that leaves headroom for the batches to come), or %s",
      what, found->suggested, m.step, found->largest_finite,
      found->largest_finite / found->suggested, kDynamic));
}

}  // namespace mnt::trainer

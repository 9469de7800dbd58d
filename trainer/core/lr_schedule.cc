#include "trainer/core/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace mnt::trainer {

double LearningRate(const LrSchedule& s, int64_t step) {
  if (step < s.warmup_steps) {
    return s.base_lr * static_cast<double>(step + 1) /
           static_cast<double>(s.warmup_steps);
  }
  if (s.kind == "constant") return s.base_lr;
  const int64_t decay_steps = std::max<int64_t>(1, s.total_steps - s.warmup_steps);
  const double progress =
      std::min(1.0, static_cast<double>(step - s.warmup_steps) /
                        static_cast<double>(decay_steps));
  const double min_lr = s.base_lr * s.min_lr_ratio;
  if (s.kind == "linear") return s.base_lr - (s.base_lr - min_lr) * progress;
  return min_lr + 0.5 * (s.base_lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

int64_t WarmupSteps(int64_t warmup_steps, double warmup_ratio, int64_t total_steps) {
  if (warmup_ratio <= 0) return warmup_steps;
  // The epsilon keeps 0.1 * 300 at 30 despite 0.1 not being exact in binary.
  return static_cast<int64_t>(
      std::ceil(warmup_ratio * static_cast<double>(total_steps) - 1e-9));
}

}  // namespace mnt::trainer

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
  return min_lr + 0.5 * (s.base_lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace mnt::trainer

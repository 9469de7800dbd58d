// Learning-rate schedules: linear warmup, then cosine or linear decay to a
// floor, or a constant rate.
#ifndef MANTISSA_TRAINER_CORE_LR_SCHEDULE_H_
#define MANTISSA_TRAINER_CORE_LR_SCHEDULE_H_

#include <cstdint>
#include <string>

namespace mnt::trainer {

struct LrSchedule {
  std::string kind = "cosine";  // cosine | linear | constant
  double base_lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.0;  // floor of the decay as a fraction of base_lr
};

// Warmup steps for a run of `total_steps`: ceil(warmup_ratio * total_steps)
// when warmup_ratio > 0 (Hugging Face's --warmup_ratio), else warmup_steps.
int64_t WarmupSteps(int64_t warmup_steps, double warmup_ratio, int64_t total_steps);

// Learning rate for optimizer step `step` (0-based). Warmup ramps linearly
// from base_lr/warmup to base_lr so that step 0 never uses lr 0.
double LearningRate(const LrSchedule& s, int64_t step);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LR_SCHEDULE_H_

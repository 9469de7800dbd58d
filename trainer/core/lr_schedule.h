// Learning-rate schedules: linear warmup, then cosine decay to a floor.
#ifndef MANTISSA_TRAINER_CORE_LR_SCHEDULE_H_
#define MANTISSA_TRAINER_CORE_LR_SCHEDULE_H_

#include <cstdint>
#include <string>

namespace mnt::trainer {

struct LrSchedule {
  std::string kind = "cosine";  // cosine | constant
  double base_lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.0;  // floor of the cosine as a fraction of base_lr
};

// Learning rate for optimizer step `step` (0-based). Warmup ramps linearly
// from base_lr/warmup to base_lr so that step 0 never uses lr 0.
double LearningRate(const LrSchedule& s, int64_t step);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LR_SCHEDULE_H_

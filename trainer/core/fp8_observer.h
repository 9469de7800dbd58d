// FP8 GEMMs (ABI 1.10) as an observer of the step: Transformer Engine's
// delayed scaling takes each micro-batch's amax into the history and the
// next pass's scales after its backward (every rank's amax maxed first, so
// the ranks quantize alike); a calibrating recipe measures the first
// batch once before step 1, so step 1 is already scaled; reported steps
// carry the scales the console and logs show.
#ifndef MANTISSA_TRAINER_CORE_FP8_OBSERVER_H_
#define MANTISSA_TRAINER_CORE_FP8_OBSERVER_H_

#include <functional>
#include <string>

#include "plugins/sdk/model_client.h"
#include "trainer/core/fp8_scaling.h"
#include "trainer/core/step_observer.h"

namespace mnt::trainer {

class Fp8Observer : public StepObserver {
 public:
  // All borrowed. `max_over_ranks`: every rank's elementwise max, in place.
  Fp8Observer(Fp8Scaling* fp8, const sdk::ModelClient* model, int64_t log_every,
              int64_t total_steps, std::function<absl::Status(const MNT_Tensor&)> max_over_ranks)
      : fp8_(fp8),
        model_(model),
        log_every_(log_every),
        total_steps_(total_steps),
        max_over_ranks_(std::move(max_over_ranks)) {}

  std::string Announcement() const override;
  absl::Status OnMicroBatchBegin(const StepContext& c) override;
  absl::Status OnMicroBatchEnd(const StepContext&) override { return Update(); }
  absl::Status OnStepReported(const StepContext& c, StepMetrics* m) override;

 private:
  absl::Status Update();

  Fp8Scaling* fp8_;
  const sdk::ModelClient* model_;
  int64_t log_every_, total_steps_;
  std::function<absl::Status(const MNT_Tensor&)> max_over_ranks_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_FP8_OBSERVER_H_

// Per-step features as observers of the training step (trainer.cc's
// TrainStep): FP8 scaling (fp8_observer.h), the overflow tracer
// (tracer_observer.h), fault injection (fault_observer.h). The step calls
// them at named points; adding the next one (a profiler, an adapter) adds
// an observer, not lines to the step.
#ifndef MANTISSA_TRAINER_CORE_STEP_OBSERVER_H_
#define MANTISSA_TRAINER_CORE_STEP_OBSERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "plugins/abi/mantissa.h"
#include "trainer/core/metrics.h"

namespace mnt::trainer {

// What the step is doing when it calls an observer.
struct StepContext {
  int64_t step = 0;           // the step being taken, from 1
  int64_t micro = 0;          // the micro-batch, from 0
  int64_t micro_batches = 1;  // per step
  std::vector<MNT_Tensor> weights;  // as the model reads them
  std::vector<MNT_Tensor> grads;    // as backward writes them
  MNT_Tensor inputs{}, targets{};   // this micro-batch
  MNT_Tensor loss_out{};            // where its forward writes the loss
  float loss_multiplier = 1;        // scale / micro-batches
  // The same on the device (ABI 1.6), when the model takes it there.
  std::optional<MNT_Tensor> device_loss_multiplier;
  const MNT_Tensor* DeviceLossMultiplier() const {
    return device_loss_multiplier.has_value() ? &*device_loss_multiplier : nullptr;
  }
};

// A pass of the model over a micro-batch.
enum class Pass { kForward, kBackward };
const char* PassName(Pass pass);

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Said once before the first step ("" for nothing).
  virtual std::string Announcement() const { return ""; }
  // Before the step's first op.
  virtual absl::Status OnStepBegin(const StepContext&) { return absl::OkStatus(); }
  // A micro-batch's data is on the device, its forward not yet issued.
  virtual absl::Status OnMicroBatchBegin(const StepContext&) { return absl::OkStatus(); }
  // Around each pass of the model.
  virtual absl::Status BeforePass(const StepContext&, Pass) { return absl::OkStatus(); }
  virtual absl::Status AfterPass(const StepContext&, Pass) { return absl::OkStatus(); }
  // After the micro-batch's backward and the accumulation of its gradients.
  virtual absl::Status OnMicroBatchEnd(const StepContext&) { return absl::OkStatus(); }
  // The step's gradients are final on this rank, before any exchange.
  virtual absl::Status BeforeExchange(const StepContext&) { return absl::OkStatus(); }
  // After a step whose metrics a sink gets: what the observer adds to them.
  virtual absl::Status OnStepReported(const StepContext&, StepMetrics*) {
    return absl::OkStatus();
  }
};

// The trainer's observers, called in the order added; the first error
// stops the call (and the step).
class StepObservers {
 public:
  void Add(std::unique_ptr<StepObserver> observer) { all_.push_back(std::move(observer)); }
  std::vector<std::string> Announcements() const;
  absl::Status OnStepBegin(const StepContext& c);
  absl::Status OnMicroBatchBegin(const StepContext& c);
  absl::Status BeforePass(const StepContext& c, Pass pass);
  absl::Status AfterPass(const StepContext& c, Pass pass);
  absl::Status OnMicroBatchEnd(const StepContext& c);
  absl::Status BeforeExchange(const StepContext& c);
  absl::Status OnStepReported(const StepContext& c, StepMetrics* m);

 private:
  std::vector<std::unique_ptr<StepObserver>> all_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_STEP_OBSERVER_H_

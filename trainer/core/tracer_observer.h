// --debug_overflow as an observer of the step: the op tracer
// (trainer/debug/op_tracer.h) labels each pass of the model with its step,
// and the step stops after the first pass in which an op made inf/NaN, with
// the tracer's one line as its error.
#ifndef MANTISSA_TRAINER_CORE_TRACER_OBSERVER_H_
#define MANTISSA_TRAINER_CORE_TRACER_OBSERVER_H_

#include "absl/strings/str_cat.h"
#include "trainer/core/step_observer.h"
#include "trainer/debug/op_tracer.h"

namespace mnt::trainer {

class TracerObserver : public StepObserver {
 public:
  explicit TracerObserver(OpTracer* tracer) : tracer_(tracer) {}

  absl::Status BeforePass(const StepContext& c, Pass pass) override {
    tracer_->BeginPhase(c.step, PassName(pass));
    return absl::OkStatus();
  }
  absl::Status AfterPass(const StepContext&, Pass) override {
    if (!tracer_->tripped()) return absl::OkStatus();
    return absl::AbortedError(tracer_->Summary());
  }

 private:
  OpTracer* tracer_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_TRACER_OBSERVER_H_

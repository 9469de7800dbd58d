// The faults tests inject on purpose (trainer/parallel/fault_injection.h),
// as an observer of the step: a parameter's working weights filled before
// the step's forward, and +inf in this rank's gradient before the step's
// exchange (the flat optimizer gradient's first element).
#ifndef MANTISSA_TRAINER_CORE_FAULT_OBSERVER_H_
#define MANTISSA_TRAINER_CORE_FAULT_OBSERVER_H_

#include "plugins/sdk/backend_client.h"
#include "trainer/core/parameters.h"
#include "trainer/core/step_observer.h"

namespace mnt::trainer {

class FaultObserver : public StepObserver {
 public:
  // Borrowed; `rank`: this process's rank (0 for one).
  FaultObserver(const sdk::BackendClient* client, ParameterStore* params, int rank)
      : client_(client), params_(params), rank_(rank) {}

  // Whether MANTISSA_FAULT_* asks for anything (else the trainer adds none).
  static bool Requested();

  absl::Status OnStepBegin(const StepContext& c) override;
  absl::Status BeforeExchange(const StepContext& c) override;

 private:
  const sdk::BackendClient* client_;
  ParameterStore* params_;
  int rank_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_FAULT_OBSERVER_H_

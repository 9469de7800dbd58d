// A training step between the backend's step markers (ABI 1.7
// Backend_StepBegin/StepEnd), so a backend may capture the step's ops and
// replay them (CUDA graphs). Closed on every way out of the step: an error
// return keeps its own message (the step failed already; StepEnd then only
// issues or drops what was deferred).
#ifndef MANTISSA_TRAINER_CORE_MARKED_STEP_H_
#define MANTISSA_TRAINER_CORE_MARKED_STEP_H_

#include "absl/status/status.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/backend_client.h"

namespace mnt::trainer {

class MarkedStep {
 public:
  // `enabled`: the run opens markers at all (and the backend has them).
  MarkedStep(const sdk::BackendClient& backend, bool enabled)
      : backend_(backend), enabled_(enabled && backend.HasStepMarkers()) {}
  MarkedStep(const MarkedStep&) = delete;
  MarkedStep& operator=(const MarkedStep&) = delete;
  ~MarkedStep() {
    if (open_) (void)backend_.StepEnd();
  }
  absl::Status Begin() {
    if (!enabled_) return absl::OkStatus();
    if (auto s = sdk::ToAbsl(backend_.StepBegin()); !s.ok()) return s;
    open_ = true;
    return absl::OkStatus();
  }
  // *replayed: the backend issued the step as a replay.
  absl::Status End(bool* replayed) {
    *replayed = false;
    if (!open_) return absl::OkStatus();
    open_ = false;
    return sdk::ToAbsl(backend_.StepEnd(replayed));
  }

 private:
  const sdk::BackendClient& backend_;
  const bool enabled_;
  bool open_ = false;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_MARKED_STEP_H_

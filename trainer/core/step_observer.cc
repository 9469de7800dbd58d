#include "trainer/core/step_observer.h"

namespace mnt::trainer {

const char* PassName(Pass pass) { return pass == Pass::kForward ? "forward" : "backward"; }

std::vector<std::string> StepObservers::Announcements() const {
  std::vector<std::string> lines;
  for (const auto& o : all_) {
    if (std::string line = o->Announcement(); !line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

// Each call: every observer in order, the first error ends it.
#define MNT_FOR_EACH_OBSERVER(call)                    \
  for (const auto& o : all_) {                         \
    if (absl::Status s = o->call; !s.ok()) return s;   \
  }                                                    \
  return absl::OkStatus()

absl::Status StepObservers::OnStepBegin(const StepContext& c) {
  MNT_FOR_EACH_OBSERVER(OnStepBegin(c));
}
absl::Status StepObservers::OnMicroBatchBegin(const StepContext& c) {
  MNT_FOR_EACH_OBSERVER(OnMicroBatchBegin(c));
}
absl::Status StepObservers::BeforePass(const StepContext& c, Pass pass) {
  MNT_FOR_EACH_OBSERVER(BeforePass(c, pass));
}
absl::Status StepObservers::AfterPass(const StepContext& c, Pass pass) {
  MNT_FOR_EACH_OBSERVER(AfterPass(c, pass));
}
absl::Status StepObservers::OnMicroBatchEnd(const StepContext& c) {
  MNT_FOR_EACH_OBSERVER(OnMicroBatchEnd(c));
}
absl::Status StepObservers::BeforeExchange(const StepContext& c) {
  MNT_FOR_EACH_OBSERVER(BeforeExchange(c));
}
absl::Status StepObservers::OnStepReported(const StepContext& c, StepMetrics* m) {
  MNT_FOR_EACH_OBSERVER(OnStepReported(c, m));
}

#undef MNT_FOR_EACH_OBSERVER

}  // namespace mnt::trainer

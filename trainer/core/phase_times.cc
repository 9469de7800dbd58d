#include "trainer/core/phase_times.h"

namespace mnt::trainer {

void PhaseTimes::Add(const std::string& phase, double seconds) {
  for (PhaseTime& p : phases_) {
    if (p.phase == phase) {
      p.seconds += seconds;
      return;
    }
  }
  phases_.push_back({phase, seconds});
}

}  // namespace mnt::trainer

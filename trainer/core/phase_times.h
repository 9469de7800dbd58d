// Wall-clock time of the loop's phases (data, forward, backward, optimizer,
// eval, checkpoint), for the final report.
#ifndef MANTISSA_TRAINER_CORE_PHASE_TIMES_H_
#define MANTISSA_TRAINER_CORE_PHASE_TIMES_H_

#include <chrono>
#include <string>
#include <vector>

#include "trainer/core/metrics.h"

namespace mnt::trainer {

// Seconds on the steady clock since construction or the last Restart().
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void Restart() { start_ = std::chrono::steady_clock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Seconds summed per phase, in the order the phases first appear.
class PhaseTimes {
 public:
  void Add(const std::string& phase, double seconds);
  const std::vector<PhaseTime>& phases() const { return phases_; }

 private:
  std::vector<PhaseTime> phases_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_PHASE_TIMES_H_

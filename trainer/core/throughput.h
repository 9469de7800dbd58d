// Samples (and tokens) per second of a training call: over the last second
// or so for each step's report, and over the whole call for the final one,
// training steps only (time given to Exclude, evaluation and checkpoints,
// does not count).
#ifndef MANTISSA_TRAINER_CORE_THROUGHPUT_H_
#define MANTISSA_TRAINER_CORE_THROUGHPUT_H_

#include <cstdint>

#include "trainer/core/metrics.h"
#include "trainer/core/phase_times.h"

namespace mnt::trainer {

// samples/s times targets per example for language models (more than one
// target per example); 0 otherwise.
double TokensPerSecond(double samples_per_second, int targets_per_example);

class ThroughputMeter {
 public:
  // Starts the clock. `targets_per_example` > 1 (language models) also
  // gives tokens per second.
  ThroughputMeter(int64_t samples_per_step, int targets_per_example);

  // Counts one finished step and fills m's elapsed_seconds,
  // samples_per_second (since the window began; a window closes after one
  // second) and tokens_per_second.
  void OnStep(StepMetrics* m);

  // `seconds` just spent on something other than training (evaluation, a
  // checkpoint): left out of every rate, and the per-step window restarts.
  void Exclude(double seconds);

  // Over every step counted so far, up to now, excluded time left out.
  double SamplesPerSecond() const;
  // The time SamplesPerSecond is over, and the samples counted.
  double TrainSeconds() const;
  int64_t samples() const { return samples_; }

 private:
  int64_t samples_per_step_;
  int targets_per_example_;
  Stopwatch clock_;
  int64_t samples_ = 0;
  double window_start_;
  int64_t window_samples_ = 0;
  double excluded_ = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_THROUGHPUT_H_

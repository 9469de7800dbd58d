#include "trainer/core/throughput.h"

namespace mnt::trainer {

ThroughputMeter::ThroughputMeter(int64_t samples_per_step,
                                 int targets_per_example)
    : samples_per_step_(samples_per_step),
      targets_per_example_(targets_per_example),
      window_start_(clock_.Seconds()) {}

void ThroughputMeter::OnStep(StepMetrics* m) {
  samples_ += samples_per_step_;
  window_samples_ += samples_per_step_;
  m->elapsed_seconds = clock_.Seconds();
  const double window = m->elapsed_seconds - window_start_;
  m->samples_per_second = window > 0 ? window_samples_ / window : 0;
  m->tokens_per_second = TokensPerSecond(m->samples_per_second, targets_per_example_);
  if (window > 1.0) {
    window_start_ = m->elapsed_seconds;
    window_samples_ = 0;
  }
}

void ThroughputMeter::Exclude(double seconds) {
  excluded_ += seconds;
  window_start_ = clock_.Seconds();
  window_samples_ = 0;
}

double ThroughputMeter::TrainSeconds() const { return clock_.Seconds() - excluded_; }

double ThroughputMeter::SamplesPerSecond() const {
  const double seconds = TrainSeconds();
  return seconds > 0 ? samples_ / seconds : 0;
}

double TokensPerSecond(double samples_per_second, int targets_per_example) {
  return targets_per_example > 1 ? samples_per_second * targets_per_example : 0.0;
}

}  // namespace mnt::trainer

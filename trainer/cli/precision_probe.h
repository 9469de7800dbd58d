// --precision=auto by measurement: a short run of the same job (same seed,
// so the same initial weights and batches) in each precision the device
// takes; the fastest whose loss stays within kProbeLossTolerance of fp32's
// wins. Other frameworks' "auto" is a capability rule (bf16 where the GPU
// has it); this one asks the machine, so a CPU without fast 16-bit kernels
// keeps fp32 and a GPU whose fp16 diverges on this model keeps bf16.
//
// Cost, bounded and printed: ProbeSteps(steps) steps per precision (10% of
// the run spread over four precisions, at least 3 and at most 20 each), no
// evaluation, no checkpoint; a precision whose steps take more than 1.5x
// fp32's after two timed steps is stopped there (it cannot win).
#ifndef MANTISSA_TRAINER_CLI_PRECISION_PROBE_H_
#define MANTISSA_TRAINER_CLI_PRECISION_PROBE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/config/config.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// A candidate's loss (the mean of its last steps') may differ from fp32's by
// this fraction of fp32's.
inline constexpr double kProbeLossTolerance = 0.02;
// A 16-bit or tf32 candidate must be this much faster than fp32 to win
// (timing noise must not pick a precision).
inline constexpr double kProbeMinSpeedup = 1.05;
// Steps a probe needs to time anything (the first builds kernels); a
// shorter run takes the fixed rule (cpu -> fp32, other devices -> bf16).
inline constexpr int64_t kMinProbeSteps = 3;

struct ProbeRow {
  std::string precision;
  bool ran = false;          // false: unavailable here (`note` says why)
  double step_ms = 0;        // median wall time of its steps after the first
  double loss = 0;           // mean training loss of its last steps
  bool within_tolerance = false;
  // Stopped after a few steps because it was far slower than fp32 (it
  // cannot win; its loss is its last step's and is not judged).
  bool stopped_slow = false;
  std::string note;
};

struct ProbeResult {
  std::vector<ProbeRow> rows;
  std::string chosen;        // the precision the run uses
  std::string reason;        // one line: why
  int64_t steps_each = 0;
  double seconds = 0;        // the whole probe's wall time
  // The table and the verdict, as printed and kept in the JSONL run record.
  std::vector<std::string> Lines() const;
};

int64_t ProbeSteps(int64_t run_steps);

// Runs the probe for `config` (its precision is ignored). `digits_csv`: as
// for LoadDatasets. An error only when fp32 itself cannot run.
absl::StatusOr<ProbeResult> ProbePrecisions(const TrainConfig& config, PluginRegistry* registry,
                                            const std::string& digits_csv);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_PRECISION_PROBE_H_

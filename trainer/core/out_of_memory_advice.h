// A run that ran out of memory says what to do about it: an allocation that
// failed (RESOURCE_EXHAUSTED: the CPU backend's "out of host memory", CUDA's
// out of memory) becomes the run's error with the way out appended, a
// smaller --batch_size or --gradient_checkpointing, and the estimator's
// command for this run's model, data, precision and memory, which prints
// what each would take and the largest batch that fits.
#ifndef MANTISSA_TRAINER_CORE_OUT_OF_MEMORY_ADVICE_H_
#define MANTISSA_TRAINER_CORE_OUT_OF_MEMORY_ADVICE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "plugins/abi/mantissa.h"
#include "trainer/config/train_config.pb.h"

namespace mnt::trainer {

// What the advice describes: the run as configured, one example of its data
// and the precision and device memory its plugins resolved.
struct MemoryAdviceFacts {
  const mantissa::TrainConfig* config = nullptr;
  MNT_DataSpec data_spec{};
  std::string precision;         // resolved (not "auto")
  int64_t memory_bytes = 0;      // the backend's total memory; 0: unknown
};

// `tools/bazel run //tools/memory:estimate -- ...` for the run's model and
// batch size.
std::string MemoryEstimateCommand(const MemoryAdviceFacts& facts);

// `s` with the advice appended when it is RESOURCE_EXHAUSTED (once: a status
// that has it already passes unchanged); any other status as it is.
absl::Status WithOutOfMemoryAdvice(const absl::Status& s, const MemoryAdviceFacts& facts);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_OUT_OF_MEMORY_ADVICE_H_

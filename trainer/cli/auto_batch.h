// --batch_size=auto: the largest micro-batch whose exact estimated peak
// (the trainer's dry run, trainer/dryrun/memory_estimate.h) fits the memory
// limit (memory_limit.h), chosen before the run instead of found by running
// out of memory (Hugging Face's auto_find_batch_size halves the batch after
// each OOM). With a global batch to keep (--global_batch_size, or a resumed
// run's), the micro-batch is the largest divisor of the rank's part of it
// that fits, and the rest is gradient accumulation.
#ifndef MANTISSA_TRAINER_CLI_AUTO_BATCH_H_
#define MANTISSA_TRAINER_CLI_AUTO_BATCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "trainer/config/config.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

struct AutoBatchRequest {
  int64_t ranks = 1;
  MNT_DataSpec spec{};          // one example, as the dataset gives it
  int64_t train_examples = 0;   // no micro-batch is larger than a rank's part of them
  bool keep_global = false;     // config's global_batch_size stays; accumulation fills it
  bool accum_chosen = false;    // --grad_accum_steps was given (then it must agree)
};

// Sets config->batch_size, grad_accum_steps and global_batch_size and
// clears auto_batch_size (what the run saves is the resolved plan); returns
// the line the run prints: the batch, its estimated peak, the limit and
// where it came from, and what one example more would take. With
// --precision=auto the batch fits every precision the probe may choose.
absl::StatusOr<std::string> ResolveAutoBatch(const AutoBatchRequest& request,
                                             PluginRegistry* registry, TrainConfig* config);

// The largest divisor of `n` that is at most `at_most` (>= 1).
int64_t LargestDivisorAtMost(int64_t n, int64_t at_most);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_AUTO_BATCH_H_

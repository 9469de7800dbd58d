// The run's plan: how many examples an optimizer step takes over all ranks
// (the global batch), and, for a resumed run, what it keeps of the plan it
// saved (steps, schedule, global batch) and what this invocation changes.
//
// A resumed run is the same run: every field comes from its saved config
// unless a flag changes it, and each change of the plan is said in one line
// ("resume: --steps 200 -> 400 (from the command line): ..."). Resuming on
// another number of ranks keeps the global batch by changing the per-rank
// batch, and says so; a per-rank batch that cannot keep it is an error.
#ifndef MANTISSA_TRAINER_CLI_RUN_PLAN_H_
#define MANTISSA_TRAINER_CLI_RUN_PLAN_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/config/config.h"

namespace mnt::trainer {

// Whether this invocation chose the field behind flag `name` (a flag on the
// command line or a --config file; not the run's saved config).
using ChosenNow = std::function<bool(const std::string& flag)>;

// Fills global_batch_size and batch_size consistently for `ranks` ranks:
// --global_batch_size given sets the per-rank batch (it must divide by
// grad_accum_steps x ranks, and agree with a --batch_size also given);
// otherwise the global batch is batch_size x grad_accum_steps x ranks.
absl::Status ResolveGlobalBatch(const ChosenNow& chosen, int64_t ranks, TrainConfig* config);

// For a run resumed from `saved` (its folder's config) with `config` = saved
// <- --config <- flags: keeps the saved global batch on `ranks` ranks unless
// the batch is chosen now, then resolves it as ResolveGlobalBatch. Returns
// one line per change of the plan (steps, schedule, learning rate, global
// batch, per-rank batch), empty when the run goes on as planned.
absl::StatusOr<std::vector<std::string>> ResolveResumedPlan(const TrainConfig& saved,
                                                            const ChosenNow& chosen,
                                                            int64_t ranks,
                                                            TrainConfig* config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_RUN_PLAN_H_

// Where a skipped step's overflow is: the parameters whose gradients hold
// inf/NaN, in the order backward reaches them, and the line that says so.
// One flag read per parameter, on skipped steps only.
#ifndef MANTISSA_TRAINER_CORE_OVERFLOW_NAMES_H_
#define MANTISSA_TRAINER_CORE_OVERFLOW_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/sdk/backend_client.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/parameters.h"
#include "trainer/parallel/gradient_sync.h"

namespace mnt::trainer {

// The names (the model's last parameter first). Scales the skipped step's
// gradients in place (the next backward overwrites them). Under ZeRO-1 a
// collective: each rank checks its share and `sync` joins the finds.
absl::StatusOr<std::vector<std::string>> NonFiniteGradientParams(
    const sdk::BackendClient& client, const ParameterStore& params, const StepScalars& scalars,
    GradientSync& sync);

// "step 3 skipped: inf/NaN in the gradient of X (first reached by backward)
// and 2 more (Y, Z); --debug_overflow traces the op that made it".
std::string SkippedStepLine(int64_t step, const std::vector<std::string>& names);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_OVERFLOW_NAMES_H_

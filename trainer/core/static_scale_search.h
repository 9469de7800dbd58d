// The advice of a stopped static-scale run (SkipGuard): a --init_scale
// measured on the run's own batch instead of a guess. A static scale that
// overflowed every step is divided by powers of two until the batch's
// scaled gradients come out finite, with the step's own forward, backward
// and inf/NaN check (UnscaleAndFindInf); the largest such scale, less some
// headroom for the batches and weights to come, is what the error names.
//
// Powers of two because multiplying by one changes a float's exponent
// only: the overflow boundary between two of them is exact, and the
// suggestion is the scale fp16 would see. Finite gradients are monotone in
// the scale (a larger one only makes every magnitude larger), so a binary
// search over the exponents needs a handful of passes.
//
// It runs once, as the run stops: the batch, the gradients and the step's
// scalars are the stopped step's and are overwritten. Under data
// parallelism each rank measures its part of the global batch on its own
// (no collective: the ranks stop on their own errors).
#ifndef MANTISSA_TRAINER_CORE_STATIC_SCALE_SEARCH_H_
#define MANTISSA_TRAINER_CORE_STATIC_SCALE_SEARCH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model_client.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/parameters.h"
#include "trainer/core/skip_guard.h"

namespace mnt::trainer {

class StaticScaleSearch {
 public:
  // The suggestion is the largest finite scale / 2^kHeadroomBits: the
  // measured batch is one of many, and gradients move as the weights train
  // (tests/integration:loss_scaling_test trains a whole run on it).
  static constexpr int kHeadroomBits = 3;
  // The smallest scale tried, 2^kMinExponent: fp16's smallest subnormal is
  // 2^-24, so a scale below 2^-24 would flush every gradient to 0 instead.
  static constexpr int kMinExponent = -24;

  // All borrowed; they outlive the search.
  struct Parts {
    const sdk::BackendClient* client = nullptr;
    const sdk::ModelClient* model = nullptr;
    ParameterStore* params = nullptr;
    StepScalars* scalars = nullptr;
    // The batch on the device (the stopped step's last micro-batch).
    MNT_Tensor inputs{}, targets{};
    int64_t micro_batches = 1;  // the step's loss multiplier is scale / this
  };

  explicit StaticScaleSearch(const Parts& parts) : p_(parts) {}

  // The largest power of two below `failing_scale` under which the batch's
  // gradients are finite; 0 when even 2^kMinExponent overflows (the model
  // or its loss makes inf/NaN: no scale helps).
  absl::StatusOr<double> LargestFiniteScale(double failing_scale);

  // The advice: LargestFiniteScale, and it / 2^kHeadroomBits to use.
  absl::StatusOr<SkipGuard::ScaleAdvice> Advise(double failing_scale);

 private:
  // One forward and backward of the batch with the loss multiplied by
  // 2^exponent / micro_batches: are all gradients finite?
  absl::StatusOr<bool> FiniteAt(int exponent);

  Parts p_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_STATIC_SCALE_SEARCH_H_

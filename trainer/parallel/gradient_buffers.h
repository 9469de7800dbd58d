// What a gradient synchronisation (gradient_sync.h) reads and writes of the
// parameter buffers: the trainer's ParameterStore implements it, so the
// synchronisation needs nothing else of the trainer.
#ifndef MANTISSA_TRAINER_PARALLEL_GRADIENT_BUFFERS_H_
#define MANTISSA_TRAINER_PARALLEL_GRADIENT_BUFFERS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "plugins/abi/mantissa.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {

// The parameter buffers a synchronisation reads and writes (the trainer's
// ParameterStore): flat views by element range, and the master-gradient
// accumulation it triggers as gradients are finished.
class GradientBuffers {
 public:
  virtual ~GradientBuffers() = default;
  virtual const ShardLayout& layout() const = 0;
  // The optimizer's gradient (fp32 master gradients, or the gradients) of
  // flat elements [begin, end).
  virtual MNT_Tensor FlatOptimizerGrads(int64_t begin, int64_t end) const = 0;
  // ZeRO-1: `n` elements of this rank's averaged share from element `at`.
  virtual MNT_Tensor ShardGrads(int64_t at, int64_t n) const = 0;
  // The working weights of flat elements [begin, end).
  virtual MNT_Tensor FlatWorkingWeights(int64_t begin, int64_t end) const = 0;
  // Micro-batch `micro`'s gradients into the master gradients: all of
  // them, or elements [first, first + count) of parameter `param`.
  virtual absl::Status AccumulateMasterGradients(int64_t micro) = 0;
  virtual absl::Status AccumulateMasterGradients(int64_t micro, int64_t param, int64_t first,
                                                 int64_t count) = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_GRADIENT_BUFFERS_H_

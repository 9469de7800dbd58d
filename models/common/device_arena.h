// Mantissa models: one backend allocation carved into aligned, typed
// pieces, so a model's activations are a single MNT_MEMORY_ACTIVATIONS
// block whose size is exactly the sum of its (aligned) tensors.
#ifndef MANTISSA_MODELS_COMMON_DEVICE_ARENA_H_
#define MANTISSA_MODELS_COMMON_DEVICE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::models {

class DeviceArena {
 public:
  static constexpr size_t kAlignment = 256;  // the backend's own guarantee

  // A planned piece: which one, and the dtype its views have.
  struct Slot {
    size_t index = 0;
    MNT_DType dtype = MNT_DTYPE_F32;
  };

  // Plans `elements` of `dtype`. The plan is also summed in double
  // (requested_bytes) so that an absurd one can be refused by size before
  // anything wraps around.
  Slot Reserve(MNT_DType dtype, double elements);
  size_t planned_bytes() const { return planned_; }
  double requested_bytes() const { return requested_; }

  // Allocates everything reserved in one block (nothing if 0 bytes).
  sdk::Status Allocate(const sdk::BackendClient& client,
                       MNT_MemoryCategory category);

  // A view of a reserved piece with `dims` (only after Allocate; the dims
  // may cover less than was reserved, e.g. a smaller batch).
  MNT_Tensor View(Slot slot, const std::vector<int64_t>& dims) const;

 private:
  std::vector<size_t> offsets_;
  size_t planned_ = 0;
  double requested_ = 0;
  sdk::DeviceBuffer block_;
};

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_DEVICE_ARENA_H_

// Mantissa models: one backend allocation carved into aligned, typed
// pieces, so a model's activations are a single MNT_MEMORY_ACTIVATIONS
// block whose size is exactly the sum of its (aligned) tensors.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_DEVICE_ARENA_H_
#define MANTISSA_PLUGINS_SDK_MODEL_DEVICE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model/views.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

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

// Implementation (header-only: the SDK ships no library).

inline DeviceArena::Slot DeviceArena::Reserve(MNT_DType dtype, double elements) {
  const double bytes = elements * static_cast<double>(sdk::DTypeSize(dtype));
  requested_ += bytes;
  offsets_.push_back(planned_);
  // A plan past what size_t holds is refused before Allocate is reached
  // (see requested_bytes); keep the arithmetic defined meanwhile.
  const size_t exact = bytes < 1e18 ? static_cast<size_t>(elements) *
                                          sdk::DTypeSize(dtype)
                                    : 0;
  planned_ += (exact + kAlignment - 1) / kAlignment * kAlignment;
  return Slot{offsets_.size() - 1, dtype};
}

inline sdk::Status DeviceArena::Allocate(const sdk::BackendClient& client,
                                         MNT_MemoryCategory category) {
  if (planned_ == 0) return sdk::Status::Ok();
  return client.Allocate(planned_, category, &block_);
}

inline MNT_Tensor DeviceArena::View(Slot slot, const std::vector<int64_t>& dims) const {
  // Pointer arithmetic only: device memory is never dereferenced here.
  return models::View(static_cast<char*>(block_.data()) + offsets_[slot.index],
                      slot.dtype, dims);
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_DEVICE_ARENA_H_

#include "models/common/device_arena.h"

#include "models/common/views.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

DeviceArena::Slot DeviceArena::Reserve(MNT_DType dtype, double elements) {
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

sdk::Status DeviceArena::Allocate(const sdk::BackendClient& client,
                                  MNT_MemoryCategory category) {
  if (planned_ == 0) return sdk::Status::Ok();
  return client.Allocate(planned_, category, &block_);
}

MNT_Tensor DeviceArena::View(Slot slot, const std::vector<int64_t>& dims) const {
  // Pointer arithmetic only: device memory is never dereferenced here.
  return models::View(static_cast<char*>(block_.data()) + offsets_[slot.index],
                      slot.dtype, dims);
}

}  // namespace mnt::models

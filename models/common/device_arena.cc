#include "models/common/device_arena.h"

namespace mnt::models {

size_t DeviceArena::Reserve(size_t bytes) {
  offsets_.push_back(planned_);
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  planned_ += rounded;
  return offsets_.size() - 1;
}

sdk::Status DeviceArena::Allocate(const sdk::BackendClient& client,
                                  MNT_MemoryCategory category) {
  if (planned_ == 0) return sdk::Status::Ok();
  return client.Allocate(planned_, category, &block_);
}

void* DeviceArena::Data(size_t handle) const {
  // Pointer arithmetic only: device memory is never dereferenced here.
  return static_cast<char*>(block_.data()) + offsets_[handle];
}

}  // namespace mnt::models

// Mantissa models: one backend allocation carved into aligned pieces, so a
// model's activations are a single MNT_MEMORY_ACTIVATIONS block whose size
// is exactly the sum of its (aligned) tensors.
#ifndef MANTISSA_MODELS_COMMON_DEVICE_ARENA_H_
#define MANTISSA_MODELS_COMMON_DEVICE_ARENA_H_

#include <cstddef>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::models {

class DeviceArena {
 public:
  static constexpr size_t kAlignment = 256;  // the backend's own guarantee

  // Plans a piece of `bytes`; returns its handle for Data() after Allocate().
  size_t Reserve(size_t bytes);
  size_t planned_bytes() const { return planned_; }

  // Allocates everything reserved in one block (nothing if 0 bytes).
  sdk::Status Allocate(const sdk::BackendClient& client,
                       MNT_MemoryCategory category);

  // Device pointer of a reserved piece (only after Allocate).
  void* Data(size_t handle) const;

 private:
  std::vector<size_t> offsets_;
  size_t planned_ = 0;
  sdk::DeviceBuffer block_;
};

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_DEVICE_ARENA_H_

// Checks that need device data (embedding ids, cross-entropy targets) run in
// the kernels, which set bits of one device word instead of forcing a host
// round trip per launch; the word is read, reported and cleared at the next
// sync point (Backend_Synchronize, a copy to the host; uploads to the device
// do not wait for the stream, see pinned_staging.h).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_DEVICE_ERRORS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_DEVICE_ERRORS_H_

#include <cuda_runtime.h>

#include "plugins/sdk/status.h"

namespace mnt::cuda {

constexpr unsigned kErrorEmbeddingId = 1u;         // id outside [0, V)
constexpr unsigned kErrorCrossEntropyTarget = 2u;  // target >= num_classes

class DeviceErrors {
 public:
  DeviceErrors() = default;
  DeviceErrors(const DeviceErrors&) = delete;
  DeviceErrors& operator=(const DeviceErrors&) = delete;
  ~DeviceErrors();

  // Allocates the word and zeroes it (synchronously, on `stream`).
  sdk::Status Init(cudaStream_t stream);
  // Where kernels atomicOr their kError* bits.
  unsigned* word() const { return word_; }
  // Waits for `stream`, then reports and clears what the kernels flagged.
  sdk::Status Check(cudaStream_t stream);

 private:
  unsigned* word_ = nullptr;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_DEVICE_ERRORS_H_

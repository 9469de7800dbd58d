// Single values in device memory: F32 [1] / I32 [1] views, reads and writes
// (each a host<->device copy, so a sync on an asynchronous backend), and the
// F32 scalars one training step and one evaluation batch share.
#ifndef MANTISSA_TRAINER_CORE_DEVICE_SCALARS_H_
#define MANTISSA_TRAINER_CORE_DEVICE_SCALARS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

MNT_Tensor F32Scalar(const sdk::DeviceBuffer& b);
MNT_Tensor I32Scalar(const sdk::DeviceBuffer& b);

// One value of type T (float or int32_t) copied to or from the device.
template <typename T>
absl::StatusOr<T> ReadScalar(const sdk::BackendClient& client,
                             const void* device_scalar) {
  T v{};
  if (auto s = sdk::ToAbsl(client.ToHost(&v, device_scalar, sizeof(v)));
      !s.ok())
    return s;
  return v;
}
template <typename T>
absl::Status WriteScalar(const sdk::BackendClient& client, void* device_scalar,
                         T value) {
  return sdk::ToAbsl(client.ToDevice(device_scalar, &value, sizeof(value)));
}

// The F32 [1] scalars of the step and the evaluation: the mean loss, the
// count of correct predictions, found_inf (non-finite gradients), 1/scale,
// the squared global gradient norm and the gradient multiplier the
// optimizer applies (clipping).
struct StepScalars {
  absl::Status Allocate(const sdk::BackendClient& client);

  sdk::DeviceBuffer loss, correct, found_inf, inv_scale, norm_sq, multiplier;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_DEVICE_SCALARS_H_

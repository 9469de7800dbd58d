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

namespace mnt::trainer {

MNT_Tensor F32Scalar(const sdk::DeviceBuffer& b);
MNT_Tensor I32Scalar(const sdk::DeviceBuffer& b);

absl::StatusOr<float> ReadF32(const sdk::BackendClient& client,
                              const void* device_scalar);
absl::Status WriteF32(const sdk::BackendClient& client, void* device_scalar,
                      float value);
absl::StatusOr<int32_t> ReadI32(const sdk::BackendClient& client,
                                const void* device_scalar);
absl::Status WriteI32(const sdk::BackendClient& client, void* device_scalar,
                      int32_t value);

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

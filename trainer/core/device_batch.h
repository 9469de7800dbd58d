// One batch on the device: inputs [B, input_dims...] and I32 targets
// [B, targets_per_example], gathered on the host and copied up.
#ifndef MANTISSA_TRAINER_CORE_DEVICE_BATCH_H_
#define MANTISSA_TRAINER_CORE_DEVICE_BATCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "trainer/core/batch_source.h"

namespace mnt::trainer {

class DeviceBatch {
 public:
  // Room for `max_batch` examples of `source` (the training set; an
  // evaluation set has the same spec).
  static absl::StatusOr<std::unique_ptr<DeviceBatch>> Create(
      const sdk::BackendClient& client, const BatchSource& source,
      int64_t max_batch);

  // Gathers `indices` of `source` and copies them to the device.
  absl::Status Upload(const BatchSource& source,
                      const std::vector<int64_t>& indices);

  // Views of the first `batch` examples, shaped by `spec`.
  MNT_Tensor Inputs(const MNT_DataSpec& spec, int64_t batch) const;
  MNT_Tensor Targets(const MNT_DataSpec& spec, int64_t batch) const;

 private:
  explicit DeviceBatch(const sdk::BackendClient& client) : client_(client) {}

  const sdk::BackendClient& client_;
  sdk::DeviceBuffer inputs_, targets_;
  std::vector<uint8_t> host_inputs_;
  std::vector<int32_t> host_targets_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_DEVICE_BATCH_H_

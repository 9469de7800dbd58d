#include "trainer/core/device_scalars.h"

#include "plugins/sdk/tensor.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

MNT_Tensor F32Scalar(const sdk::DeviceBuffer& b) {
  return sdk::MakeTensor(b.data(), MNT_DTYPE_F32, {1});
}

MNT_Tensor I32Scalar(const sdk::DeviceBuffer& b) {
  return sdk::MakeTensor(b.data(), MNT_DTYPE_I32, {1});
}

absl::Status StepScalars::Allocate(const sdk::BackendClient& client) {
  for (sdk::DeviceBuffer* b :
       {&loss, &correct, &found_inf, &inv_scale, &norm_sq, &multiplier}) {
    if (auto s = sdk::ToAbsl(client.Allocate(sizeof(float), MNT_MEMORY_DATA, b));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer

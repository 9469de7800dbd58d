#include "trainer/core/device_scalars.h"

#include "plugins/sdk/tensor.h"
#include "trainer/loader/plugin_status.h"

namespace mnt::trainer {

MNT_Tensor F32Scalar(const sdk::DeviceBuffer& b) {
  return sdk::MakeTensor(b.data(), MNT_DTYPE_F32, {1});
}

MNT_Tensor I32Scalar(const sdk::DeviceBuffer& b) {
  return sdk::MakeTensor(b.data(), MNT_DTYPE_I32, {1});
}

absl::StatusOr<float> ReadF32(const sdk::BackendClient& client,
                              const void* device_scalar) {
  float v = 0;
  if (auto s = ToAbslStatus(client.ToHost(&v, device_scalar, sizeof(v)));
      !s.ok())
    return s;
  return v;
}

absl::Status WriteF32(const sdk::BackendClient& client, void* device_scalar,
                      float value) {
  return ToAbslStatus(client.ToDevice(device_scalar, &value, sizeof(value)));
}

absl::StatusOr<int32_t> ReadI32(const sdk::BackendClient& client,
                                const void* device_scalar) {
  int32_t v = 0;
  if (auto s = ToAbslStatus(client.ToHost(&v, device_scalar, sizeof(v)));
      !s.ok())
    return s;
  return v;
}

absl::Status WriteI32(const sdk::BackendClient& client, void* device_scalar,
                      int32_t value) {
  return ToAbslStatus(client.ToDevice(device_scalar, &value, sizeof(value)));
}

absl::Status StepScalars::Allocate(const sdk::BackendClient& client) {
  for (sdk::DeviceBuffer* b :
       {&loss, &correct, &found_inf, &inv_scale, &norm_sq, &multiplier}) {
    if (auto s = ToAbslStatus(client.Allocate(sizeof(float), MNT_MEMORY_DATA, b));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer

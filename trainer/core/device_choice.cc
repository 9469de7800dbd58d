#include "trainer/core/device_choice.h"

#include <memory>

#include "plugins/sdk/backend_instance.h"

namespace mnt::trainer {

absl::StatusOr<std::string> ResolveDevice(const std::string& device,
                                          PluginRegistry* registry) {
  if (device != "auto") return device;
  // cuda wins when its plugin is on the search path and sees a device.
  auto cuda = registry->Get(MNT_PLUGIN_KIND_BACKEND, "cuda");
  if (!cuda.ok()) return std::string("cpu");
  std::unique_ptr<sdk::BackendInstance> probe;
  if (!sdk::BackendInstance::Create((*cuda)->api, "", &probe).ok()) {
    return std::string("cpu");
  }
  return std::string("cuda");
}

std::string ResolvePrecision(const std::string& precision,
                             const std::string& device) {
  if (precision != "auto") return precision;
  return device == "cpu" ? "fp32" : "bf16";
}

}  // namespace mnt::trainer

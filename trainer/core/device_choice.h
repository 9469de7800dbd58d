// --device=auto and --precision=auto resolved to a plugin name.
#ifndef MANTISSA_TRAINER_CORE_DEVICE_CHOICE_H_
#define MANTISSA_TRAINER_CORE_DEVICE_CHOICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// Picks "cpu" or "cuda" for --device=auto (cuda when its plugin loads and
// creates an instance, i.e. finds a device); any other value is kept.
absl::StatusOr<std::string> ResolveDevice(const std::string& device,
                                          PluginRegistry* registry);

// Picks the precision for --precision=auto: bf16 on a GPU, fp32 on the CPU,
// where 16-bit formats are emulated and only cost time.
std::string ResolvePrecision(const std::string& precision,
                             const std::string& device);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_DEVICE_CHOICE_H_

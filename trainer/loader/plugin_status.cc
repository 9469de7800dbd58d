#include "trainer/loader/plugin_status.h"

#include "plugins/sdk/plugin_error.h"

namespace mnt::trainer {

absl::Status ToAbslStatus(const sdk::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.code()),
                      status.message());
}

absl::Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                   MNT_Error* error) {
  return ToAbslStatus(sdk::StatusFromPluginError(plugin, error));
}

}  // namespace mnt::trainer

#include "trainer/loader/plugin_status.h"

#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/plugin_error.h"

namespace mnt::trainer {

absl::Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                   MNT_Error* error) {
  return sdk::ToAbsl(sdk::StatusFromPluginError(plugin, error));
}

}  // namespace mnt::trainer

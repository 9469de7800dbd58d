// What a plugin must be for this host to use it: the ABI version (same major,
// minor not newer), struct sizes, kind, name and every required entry point.
// Reads the plugin's tables only; never calls into the plugin.
#ifndef MANTISSA_TRAINER_LOADER_PLUGIN_VALIDATION_H_
#define MANTISSA_TRAINER_LOADER_PLUGIN_VALIDATION_H_

#include <string>

#include "absl/status/status.h"
#include "plugins/abi/mantissa.h"

namespace mnt::trainer {

// Checks that `api` is a plugin this host can use: one-line reason on
// failure, prefixed with `origin`.
absl::Status ValidatePluginApi(const MNT_Plugin_Api* api,
                               const std::string& origin);

// The one-line refusal of a plugin: FailedPrecondition "<origin>: <reason>".
absl::Status RefusePlugin(const std::string& origin, const std::string& reason);

// True when `plugin` is a backend whose API has the 1.1 Event_* calls, all
// set. A 1.0 backend never has them: the trainer then times with the host
// clock after Backend_Synchronize.
bool HasEvents(const MNT_Plugin_Api* plugin);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_VALIDATION_H_

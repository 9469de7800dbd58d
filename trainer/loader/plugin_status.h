// Plugin errors as absl::Status, for the trainer's side of the ABI (the SDK
// itself stays free of absl; plugins/sdk/absl converts its Status).
#ifndef MANTISSA_TRAINER_LOADER_PLUGIN_STATUS_H_
#define MANTISSA_TRAINER_LOADER_PLUGIN_STATUS_H_

#include "absl/status/status.h"
#include "plugins/abi/mnt_common.h"

namespace mnt::trainer {

// Takes ownership of `error` (made by `plugin`; may be null) and turns it
// into an absl::Status with the same code and message; an error claiming
// OK or an unknown code is kUnknown (sdk::StatusFromPluginError).
absl::Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                   MNT_Error* error);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_STATUS_H_

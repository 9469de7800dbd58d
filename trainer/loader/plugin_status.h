// Plugin errors and SDK statuses as absl::Status, for the trainer's side of
// the ABI (the SDK itself stays free of absl).
#ifndef MANTISSA_TRAINER_LOADER_PLUGIN_STATUS_H_
#define MANTISSA_TRAINER_LOADER_PLUGIN_STATUS_H_

#include "absl/status/status.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/status.h"

namespace mnt::trainer {

// The same code and message. MNT_ErrorCode and absl::StatusCode share their
// numbering (both are google.rpc.Code).
absl::Status ToAbslStatus(const sdk::Status& status);

// Takes ownership of `error` (made by `plugin`; may be null) and turns it
// into an absl::Status with the same code and message; an error claiming
// OK or an unknown code is kUnknown (sdk::StatusFromPluginError).
absl::Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                   MNT_Error* error);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_PLUGIN_STATUS_H_

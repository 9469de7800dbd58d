// Mantissa plugin SDK: sdk::Status -> absl::Status for hosts built with
// absl. The codes are the same numbers (MNT_ErrorCode follows
// absl::StatusCode), so the conversion keeps code and message.
#ifndef MANTISSA_PLUGINS_SDK_ABSL_STATUS_H_
#define MANTISSA_PLUGINS_SDK_ABSL_STATUS_H_

#include "absl/status/status.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

inline absl::Status ToAbsl(const Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_ABSL_STATUS_H_

// Mantissa plugin SDK: turning an MNT_Error a plugin returned into a Status.
// Every SDK client (backend, model, precision, loss scaler) goes through here,
// so each error is read and freed the same way.
#ifndef MANTISSA_PLUGINS_SDK_PLUGIN_ERROR_H_
#define MANTISSA_PLUGINS_SDK_PLUGIN_ERROR_H_

#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// Takes ownership of an error produced by `plugin` (NULL is success): copies
// its code and message and frees it with the plugin's own Error_Destroy. An
// error object is a failure whatever code it claims: OK or a code outside
// the enum becomes MNT_ERROR_UNKNOWN, so no error is ever lost.
inline Status StatusFromPluginError(const MNT_Plugin_Api* plugin,
                                    MNT_Error* error) {
  if (error == nullptr) return Status::Ok();
  // Kept as int32 until checked: an unknown value is never held (and loaded)
  // as MNT_ErrorCode (abi_enum.h).
  const int32_t raw = static_cast<int32_t>(plugin->Error_GetCode(error));
  const MNT_ErrorCode code = raw <= MNT_ERROR_OK || raw > MNT_ERROR_UNAUTHENTICATED
                                 ? MNT_ERROR_UNKNOWN
                                 : static_cast<MNT_ErrorCode>(raw);
  const char* message = plugin->Error_Message(error);
  Status s(code, message != nullptr ? message : "(no message)");
  plugin->Error_Destroy(error);
  return s;
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_PLUGIN_ERROR_H_

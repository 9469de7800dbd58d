// Mantissa plugin SDK: one backend instance owned by the host (the trainer,
// tools): Backend_Create on the way in, Backend_Destroy on the way out, and a
// BackendClient for everything in between.
#ifndef MANTISSA_PLUGINS_SDK_BACKEND_INSTANCE_H_
#define MANTISSA_PLUGINS_SDK_BACKEND_INSTANCE_H_

#include <memory>
#include <string>

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// Owns one MNT_Backend. Not movable: DeviceBuffers keep a pointer to its
// client(), so it lives where it was created (hold it in a unique_ptr).
// Everything allocated through it must be freed before it is destroyed.
class BackendInstance {
 public:
  // Backend_Create with `options` ("" for the plugin's defaults) on device
  // `device_ordinal` (0: the backend's first device).
  static Status Create(const MNT_Plugin_Api* plugin, const std::string& options,
                       std::unique_ptr<BackendInstance>* out, int32_t device_ordinal = 0) {
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    a.options = options.c_str();
    a.device_ordinal = device_ordinal;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin, plugin->backend->Backend_Create(&a)));
    out->reset(new BackendInstance(plugin, a.backend));
    return Status::Ok();
  }
  ~BackendInstance() {
    MNT_Backend_Destroy_Args a{};
    a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    a.backend = client_.backend();
    // Destructors cannot report; a failing destroy has nothing left to save.
    (void)StatusFromPluginError(client_.plugin(),
                                client_.api()->Backend_Destroy(&a));
  }
  BackendInstance(const BackendInstance&) = delete;
  BackendInstance& operator=(const BackendInstance&) = delete;

  const BackendClient& client() const { return client_; }
  const MNT_Plugin_Api* plugin() const { return client_.plugin(); }
  MNT_Backend* backend() const { return client_.backend(); }

  // Backend_GetInfo: the device's name (owned by the backend), its memory and
  // whether device pointers are host memory.
  Status GetInfo(MNT_Backend_GetInfo_Args* info) const {
    *info = {};
    info->struct_size = MNT_Backend_GetInfo_Args_STRUCT_SIZE;
    info->backend = client_.backend();
    return StatusFromPluginError(plugin(), client_.api()->Backend_GetInfo(info));
  }

  // Whether Backend_GetOpSupport reports `op` (a failing query is "no").
  bool Supports(MNT_Op op) const {
    MNT_Backend_GetOpSupport_Args a{};
    a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    a.backend = client_.backend();
    a.op = op;
    return StatusFromPluginError(plugin(), client_.api()->Backend_GetOpSupport(&a))
               .ok() &&
           a.supported != 0;
  }

 private:
  BackendInstance(const MNT_Plugin_Api* plugin, MNT_Backend* backend)
      : client_(plugin, backend) {}

  BackendClient client_;
};

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_BACKEND_INSTANCE_H_

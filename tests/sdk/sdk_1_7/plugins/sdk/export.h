// Mantissa plugin SDK: the one-line export of a plugin's entry symbol.
//
//   const MNT_Plugin_Api* Fp16PluginApi() {
//     static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
//         MNT_PLUGIN_KIND_PRECISION, "fp16", "fp16 mixed precision",
//         nullptr, &kFp16Api, nullptr, nullptr);
//     return &api;
//   }
//   MNT_EXPORT_PLUGIN(Fp16PluginApi)   // in the .so's own export.cc
#ifndef MANTISSA_PLUGINS_SDK_EXPORT_H_
#define MANTISSA_PLUGINS_SDK_EXPORT_H_

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

inline MNT_Plugin_Api MakePluginApi(MNT_PluginKind kind, const char* name,
                                    const char* description,
                                    const MNT_Backend_Api* backend,
                                    const MNT_Precision_Api* precision,
                                    const MNT_Model_Api* model,
                                    MNT_Plugin_Initialize* initialize) {
  MNT_Plugin_Api api{};
  api.struct_size = MNT_Plugin_Api_STRUCT_SIZE;
  api.extension_start = nullptr;
  api.abi_version.struct_size = MNT_Api_Version_STRUCT_SIZE;
  api.abi_version.major_version = MNT_ABI_MAJOR;
  api.abi_version.minor_version = MNT_ABI_MINOR;
  api.kind = kind;
  api.name = name;
  api.description = description;
  api.Error_Destroy = &ErrorDestroy;
  api.Error_Message = &ErrorMessage;
  api.Error_GetCode = &ErrorGetCode;
  api.Plugin_Initialize = initialize;
  api.backend = backend;
  api.precision = precision;
  api.model = model;
  return api;
}

}  // namespace mnt::sdk

// Defines the plugin's one exported symbol. `getter` is a C++ function
// returning the plugin's const MNT_Plugin_Api* (built with MakePluginApi);
// keeping the getter separate lets tests link several plugins statically.
//
//   MNT_EXPORT_PLUGIN(mnt::cpu::CpuBackendPluginApi)
#define MNT_EXPORT_PLUGIN(getter)                                         \
  extern "C" __attribute__((visibility("default"))) const MNT_Plugin_Api* \
  MNT_GetPluginApi(void) {                                                \
    return getter();                                                      \
  }

#endif  // MANTISSA_PLUGINS_SDK_EXPORT_H_

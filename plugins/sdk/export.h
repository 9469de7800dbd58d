// Mantissa plugin SDK: the one-line export of a plugin's entry symbol.
//
//   static const MNT_Precision_Api kApi = {...};
//   MNT_EXPORT_PRECISION_PLUGIN("fp16", "fp16 mixed precision", &kApi)
//
// expands to the extern "C" MNT_GetPluginApi() returning a static, constant
// MNT_Plugin_Api that carries the header version it was compiled with.
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

#define MNT_INTERNAL_EXPORT_PLUGIN(kind, name, desc, b, p, m)             \
  extern "C" __attribute__((visibility("default"))) const MNT_Plugin_Api* \
  MNT_GetPluginApi(void) {                                                \
    static const MNT_Plugin_Api api =                                     \
        ::mnt::sdk::MakePluginApi(kind, name, desc, b, p, m, nullptr);    \
    return &api;                                                          \
  }

#define MNT_EXPORT_BACKEND_PLUGIN(name, desc, backend_api) \
  MNT_INTERNAL_EXPORT_PLUGIN(MNT_PLUGIN_KIND_BACKEND, name, desc, backend_api, nullptr, nullptr)
#define MNT_EXPORT_PRECISION_PLUGIN(name, desc, precision_api) \
  MNT_INTERNAL_EXPORT_PLUGIN(MNT_PLUGIN_KIND_PRECISION, name, desc, nullptr, precision_api, nullptr)
#define MNT_EXPORT_MODEL_PLUGIN(name, desc, model_api) \
  MNT_INTERNAL_EXPORT_PLUGIN(MNT_PLUGIN_KIND_MODEL, name, desc, nullptr, nullptr, model_api)

#endif  // MANTISSA_PLUGINS_SDK_EXPORT_H_

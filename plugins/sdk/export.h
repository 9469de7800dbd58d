// Mantissa plugin SDK: the one-line export of a plugin's entry symbol.
//
//   const MNT_Plugin_Api* Fp16PluginApi() {
//     static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
//         MNT_PLUGIN_KIND_PRECISION, "fp16", "fp16 mixed precision",
//         nullptr, &kFp16Api, nullptr, nullptr);
//     return &api;
//   }
//   MNT_EXPORT_PLUGIN(Fp16PluginApi)   // in the .so's own export.cc
//
// A plugin advertises the optional operands and behaviours it offers (ABI
// 1.9, MNT_Capability) with a capabilities extension on its chain; a 1.9
// plugin without one offers none:
//
//   static const int32_t kCaps[] = {MNT_CAPABILITY_PRECISION_OPTIONS};
//   static MNT_Capabilities_Extension caps = mnt::sdk::MakeCapabilitiesExtension(kCaps);
//   static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
//       ..., nullptr, &caps.header.base);
#ifndef MANTISSA_PLUGINS_SDK_EXPORT_H_
#define MANTISSA_PLUGINS_SDK_EXPORT_H_

#include <cstddef>
#include <cstdint>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// A capabilities extension listing `capabilities` (static storage of the
// plugin: the extension points at it), linked to `next` (NULL: the chain's
// end). Keep the result in static storage too.
inline MNT_Capabilities_Extension MakeCapabilitiesExtension(const int32_t* capabilities,
                                                            size_t num_capabilities,
                                                            MNT_Extension_Base* next = nullptr) {
  MNT_Capabilities_Extension e{};
  e.header.base.struct_size = MNT_Capabilities_Extension_STRUCT_SIZE;
  e.header.base.type = MNT_EXTENSION_TYPE_CAPABILITIES;
  e.header.base.next = next;
  e.header.name = MNT_CAPABILITIES_EXTENSION_NAME;
  e.header.version = MNT_CAPABILITIES_EXTENSION_VERSION;
  e.capabilities = capabilities;
  e.num_capabilities = num_capabilities;
  return e;
}
template <size_t N>
MNT_Capabilities_Extension MakeCapabilitiesExtension(const int32_t (&capabilities)[N],
                                                     MNT_Extension_Base* next = nullptr) {
  return MakeCapabilitiesExtension(capabilities, N, next);
}

// A backend's collectives extension (mnt_collectives.h) with its four
// calls, linked to `next` (NULL: the chain's end). Keep it in static
// storage.
inline MNT_Collectives_Extension MakeCollectivesExtension(
    MNT_Collectives_GetUniqueId* get_unique_id, MNT_Communicator_Create* create,
    MNT_Communicator_Destroy* destroy, MNT_Collectives_Run* run,
    MNT_Extension_Base* next = nullptr) {
  MNT_Collectives_Extension e{};
  e.header.base.struct_size = MNT_Collectives_Extension_V1_STRUCT_SIZE;
  e.header.base.type = MNT_EXTENSION_TYPE_COLLECTIVES;
  e.header.base.next = next;
  e.header.name = MNT_COLLECTIVES_EXTENSION_NAME;
  e.header.version = 1;
  e.Collectives_GetUniqueId = get_unique_id;
  e.Communicator_Create = create;
  e.Communicator_Destroy = destroy;
  e.Collectives_Run = run;
  return e;
}

// Version 2: with started collectives (Collectives_Start/Collectives_Wait).
inline MNT_Collectives_Extension MakeCollectivesExtension(
    MNT_Collectives_GetUniqueId* get_unique_id, MNT_Communicator_Create* create,
    MNT_Communicator_Destroy* destroy, MNT_Collectives_Run* run, MNT_Collectives_Start* start,
    MNT_Collectives_Wait* wait, MNT_Extension_Base* next = nullptr) {
  MNT_Collectives_Extension e =
      MakeCollectivesExtension(get_unique_id, create, destroy, run, next);
  e.header.base.struct_size = MNT_Collectives_Extension_STRUCT_SIZE;
  e.header.version = 2;
  e.Collectives_Start = start;
  e.Collectives_Wait = wait;
  return e;
}

// `extensions`: the first link of the plugin's extension chain (static
// storage), or NULL for none.
inline MNT_Plugin_Api MakePluginApi(MNT_PluginKind kind, const char* name,
                                    const char* description,
                                    const MNT_Backend_Api* backend,
                                    const MNT_Precision_Api* precision,
                                    const MNT_Model_Api* model,
                                    MNT_Plugin_Initialize* initialize,
                                    MNT_Extension_Base* extensions = nullptr) {
  MNT_Plugin_Api api{};
  api.struct_size = MNT_Plugin_Api_STRUCT_SIZE;
  api.extension_start = extensions;
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

// Mantissa plugin SDK: the one-line export of a plugin's entry symbol, and
// the makers of the tables it returns.
//
//   const MNT_Precision_Api kFp16Api = [] {
//     MNT_Precision_Api api = mnt::sdk::MakePrecisionApi(
//         &GetPolicy, &GetOpClassPolicy, &GetMemoryPlan, &ScalerCreate,
//         &ScalerDestroy, &ScalerGetState, &ScalerSetState, &ScalerUpdate);
//     api.LossScaler_GetRecipe = &ScalerGetRecipe;  // optional (1.5)
//     return api;
//   }();
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

// A model's data extension (ABI 1.12) declaring the kinds of data it trains
// on (`kinds`: MNT_DataKind values, static storage of the plugin), linked to
// `next`. Keep the result in static storage too.
inline MNT_ModelData_Extension MakeModelDataExtension(const int32_t* kinds, size_t num_kinds,
                                                      MNT_Extension_Base* next = nullptr) {
  MNT_ModelData_Extension e{};
  e.header.base.struct_size = MNT_ModelData_Extension_STRUCT_SIZE;
  e.header.base.type = MNT_EXTENSION_TYPE_MODEL_DATA;
  e.header.base.next = next;
  e.header.name = MNT_MODEL_DATA_EXTENSION_NAME;
  e.header.version = MNT_MODEL_DATA_EXTENSION_VERSION;
  e.kinds = kinds;
  e.num_kinds = num_kinds;
  return e;
}
template <size_t N>
MNT_ModelData_Extension MakeModelDataExtension(const int32_t (&kinds)[N],
                                               MNT_Extension_Base* next = nullptr) {
  return MakeModelDataExtension(kinds, N, next);
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

// The sub-API tables with struct_size for these headers and the calls every
// plugin of the kind has (ABI 1.0). Set an optional call on the result by
// name (`api.LossScaler_GetRecipe = &GetRecipe;`); everything else is NULL,
// which the ABI reads as "not offered". Unlike a positional initializer,
// a table built so stays complete, and -Wall -Wextra -Werror clean, when a
// later minor appends a member (docs/plugins.md section 1.5). Keep the
// result in static storage.
inline MNT_Precision_Api MakePrecisionApi(
    MNT_Precision_GetPolicy* get_policy, MNT_Precision_GetOpClassPolicy* get_op_class_policy,
    MNT_Precision_GetMemoryPlan* get_memory_plan, MNT_LossScaler_Create* scaler_create,
    MNT_LossScaler_Destroy* scaler_destroy, MNT_LossScaler_GetState* scaler_get_state,
    MNT_LossScaler_SetState* scaler_set_state, MNT_LossScaler_Update* scaler_update) {
  MNT_Precision_Api api{};
  api.struct_size = MNT_Precision_Api_STRUCT_SIZE;
  api.Precision_GetPolicy = get_policy;
  api.Precision_GetOpClassPolicy = get_op_class_policy;
  api.Precision_GetMemoryPlan = get_memory_plan;
  api.LossScaler_Create = scaler_create;
  api.LossScaler_Destroy = scaler_destroy;
  api.LossScaler_GetState = scaler_get_state;
  api.LossScaler_SetState = scaler_set_state;
  api.LossScaler_Update = scaler_update;
  return api;
}

inline MNT_Model_Api MakeModelApi(MNT_Model_Create* create, MNT_Model_Destroy* destroy,
                                  MNT_Model_GetParamCount* get_param_count,
                                  MNT_Model_GetParamSpec* get_param_spec,
                                  MNT_Model_Forward* forward, MNT_Model_Backward* backward) {
  MNT_Model_Api api{};
  api.struct_size = MNT_Model_Api_STRUCT_SIZE;
  api.Model_Create = create;
  api.Model_Destroy = destroy;
  api.Model_GetParamCount = get_param_count;
  api.Model_GetParamSpec = get_param_spec;
  api.Model_Forward = forward;
  api.Model_Backward = backward;
  return api;
}

// Events (1.1) and step markers (1.7) are optional: set them by name.
inline MNT_Backend_Api MakeBackendApi(
    MNT_Backend_Create* create, MNT_Backend_Destroy* destroy, MNT_Backend_GetInfo* get_info,
    MNT_Memory_Allocate* memory_allocate, MNT_Memory_Free* memory_free,
    MNT_Memory_Copy* memory_copy, MNT_Memory_GetStats* get_stats,
    MNT_Memory_ResetPeak* reset_peak, MNT_Backend_Synchronize* synchronize,
    MNT_Backend_GetOpSupport* get_op_support, MNT_Backend_Run* run) {
  MNT_Backend_Api api{};
  api.struct_size = MNT_Backend_Api_STRUCT_SIZE;
  api.Backend_Create = create;
  api.Backend_Destroy = destroy;
  api.Backend_GetInfo = get_info;
  api.Memory_Allocate = memory_allocate;
  api.Memory_Free = memory_free;
  api.Memory_Copy = memory_copy;
  api.Memory_GetStats = get_stats;
  api.Memory_ResetPeak = reset_peak;
  api.Backend_Synchronize = synchronize;
  api.Backend_GetOpSupport = get_op_support;
  api.Backend_Run = run;
  return api;
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

#include "trainer/loader/plugin_validation.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/extension_chain.h"
#include "trainer/loader/plugin_names.h"

namespace mnt::trainer {
namespace {

// Sizes a plugin built against ABI 1.0 stores in struct_size. Neither
// MNT_Plugin_Api nor MNT_Model_Api has grown since 1.0; MNT_Backend_Api
// gained the Event_* calls in 1.1 (and the step markers in 1.7),
// MNT_Precision_Api LossScaler_GetRecipe in 1.5 and
// Precision_GetScalingRecipe in 1.10, all optional.
constexpr size_t kPluginApiSize10 = MNT_Plugin_Api_STRUCT_SIZE;
constexpr size_t kBackendApiSize10 = MNT_Backend_Api_STRUCT_SIZE_1_0;
constexpr size_t kPrecisionApiSize10 = MNT_Precision_Api_STRUCT_SIZE_1_0;
constexpr size_t kModelApiSize10 = MNT_Model_Api_STRUCT_SIZE;
// The part of MNT_Plugin_Api every major version keeps: enough to read the
// version and refuse a plugin we cannot understand.
constexpr size_t kPluginApiVersionEnd =
    MNT_STRUCT_SIZE(MNT_Plugin_Api, abi_version);

#define MNT_STRINGIFY_INNER(x) #x
#define MNT_STRINGIFY(x) MNT_STRINGIFY_INNER(x)
// "MAJOR.MINOR" of the headers this trainer was built with.
constexpr const char* kAbiVersion =
    MNT_STRINGIFY(MNT_ABI_MAJOR) "." MNT_STRINGIFY(MNT_ABI_MINOR);
// 1.2, 1.3 and 1.4 appended ops and params structs only; 1.5 appended
// LossScaler_GetRecipe to MNT_Precision_Api (optional, so the required set
// stays the 1.0 table); 1.6 appended ops, a params struct and a field of
// MNT_Model_Backward_Args (a model-side field: the loaded sizes stay); 1.7
// an optional learning-rate input of the optimizer ops (no struct changed),
// appended the optional step markers to MNT_Backend_Api (both or neither,
// checked below; the required set stays the 1.0 table) and appended fields
// to the optimizer params structs; 1.8 appended fields to
// MNT_AttentionParams and MNT_Backend_GetInfo_Args (no API table changed);
// 1.9 added extensions on the plugin's chain (no API table changed); 1.10
// appended the optional Precision_GetScalingRecipe to MNT_Precision_Api (a
// 1.9-sized table is as valid as a 1.10 one: the required set stays the
// 1.0 table, and hosts read the new slot only through MNT_HAS_FIELD, as
// sdk::PrecisionClient::GetScalingRecipe does); 1.11 appended fields to the
// optimizer params structs and a capability (no API table changed); 1.12
// appended the optional optimizer ops ADAMW8BIT_STEP and ADAFACTOR_STEP,
// MNT_AdafactorParams and a model's data extension on the chain (no API
// table changed); 1.13 two capabilities, MODEL_FROZEN_PARAMS and
// MODEL_LORA (no struct changed); 1.14 the optional ops
// MULTI_ADAMW8BIT_STEP and MULTI_ADAFACTOR_STEP and MNT_MultiAdafactorParams
// (no API table changed); 1.15 a model's stacked_dims, appended to
// MNT_Model_GetParamSpec_Args (no API table changed); 1.16 a parameter's
// role, appended to the same struct (no API table changed).
static_assert(MNT_ABI_MAJOR == 1 && MNT_ABI_MINOR == 16,
              "check the 1.0 sizes above when the ABI changes");

// A named function pointer inside an API struct, for the NULL checks.
struct RequiredFn {
  const char* name;
  const void* fn;
};
#define MNT_REQUIRED_FN(api, field) \
  RequiredFn { #field, reinterpret_cast<const void*>((api)->field) }

absl::Status Refuse(const std::string& origin, const std::string& reason) {
  return RefusePlugin(origin, reason);
}

absl::Status CheckApiSize(const std::string& origin, const char* api_name,
                          size_t actual, size_t needed) {
  if (actual < needed) {
    return Refuse(origin, absl::StrCat(api_name, " struct_size ", actual,
                                       " is smaller than the ", needed,
                                       " bytes of ABI 1.0"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequired(const std::string& origin, const char* api_name,
                           std::initializer_list<RequiredFn> fns) {
  for (const RequiredFn& f : fns) {
    if (f.fn == nullptr) {
      return Refuse(origin, absl::StrCat("required function ", api_name, ".",
                                         f.name, " is NULL"));
    }
  }
  return absl::OkStatus();
}

// A sub-API table: at least its 1.0 size, and every required function set.
absl::Status CheckTable(const std::string& origin, const char* api_name,
                        size_t actual_size, size_t size_1_0,
                        std::initializer_list<RequiredFn> required) {
  if (auto s = CheckApiSize(origin, api_name, actual_size, size_1_0); !s.ok()) {
    return s;
  }
  return CheckRequired(origin, api_name, required);
}

absl::Status ValidateBackendApi(const std::string& origin,
                                const MNT_Backend_Api* b) {
  absl::Status s = CheckTable(origin, "MNT_Backend_Api", b->struct_size,
                              kBackendApiSize10,
                              {MNT_REQUIRED_FN(b, Backend_Create),
                               MNT_REQUIRED_FN(b, Backend_Destroy),
                               MNT_REQUIRED_FN(b, Backend_GetInfo),
                               MNT_REQUIRED_FN(b, Memory_Allocate),
                               MNT_REQUIRED_FN(b, Memory_Free),
                               MNT_REQUIRED_FN(b, Memory_Copy),
                               MNT_REQUIRED_FN(b, Memory_GetStats),
                               MNT_REQUIRED_FN(b, Memory_ResetPeak),
                               MNT_REQUIRED_FN(b, Backend_Synchronize),
                               MNT_REQUIRED_FN(b, Backend_GetOpSupport),
                               MNT_REQUIRED_FN(b, Backend_Run)});
  if (!s.ok()) return s;
  // Events (1.1) are optional, but all four or none: timing needs each one.
  if (MNT_HAS_FIELD(b, MNT_Backend_Api, Event_Destroy)) {
    const int set = (b->Event_Create != nullptr) +
                    (b->Event_Record != nullptr) +
                    (b->Event_ElapsedTime != nullptr) +
                    (b->Event_Destroy != nullptr);
    if (set != 0 && set != 4) {
      return Refuse(origin,
                    "MNT_Backend_Api sets some but not all of the Event_* "
                    "functions (all four or none)");
    }
  }
  // Step markers (1.7) are optional, but both or neither: a step opened
  // must be closable.
  if (MNT_HAS_FIELD(b, MNT_Backend_Api, Backend_StepEnd) &&
      (b->Backend_StepBegin == nullptr) != (b->Backend_StepEnd == nullptr)) {
    return Refuse(origin,
                  "MNT_Backend_Api sets only one of Backend_StepBegin and "
                  "Backend_StepEnd (both or neither)");
  }
  return absl::OkStatus();
}

absl::Status ValidatePrecisionApi(const std::string& origin,
                                  const MNT_Precision_Api* p) {
  return CheckTable(origin, "MNT_Precision_Api", p->struct_size,
                    kPrecisionApiSize10,
                    {MNT_REQUIRED_FN(p, Precision_GetPolicy),
                     MNT_REQUIRED_FN(p, Precision_GetOpClassPolicy),
                     MNT_REQUIRED_FN(p, Precision_GetMemoryPlan),
                     MNT_REQUIRED_FN(p, LossScaler_Create),
                     MNT_REQUIRED_FN(p, LossScaler_Destroy),
                     MNT_REQUIRED_FN(p, LossScaler_GetState),
                     MNT_REQUIRED_FN(p, LossScaler_SetState),
                     MNT_REQUIRED_FN(p, LossScaler_Update)});
}

absl::Status ValidateModelApi(const std::string& origin,
                              const MNT_Model_Api* m) {
  return CheckTable(
      origin, "MNT_Model_Api", m->struct_size, kModelApiSize10,
      {MNT_REQUIRED_FN(m, Model_Create), MNT_REQUIRED_FN(m, Model_Destroy),
       MNT_REQUIRED_FN(m, Model_GetParamCount),
       MNT_REQUIRED_FN(m, Model_GetParamSpec),
       MNT_REQUIRED_FN(m, Model_Forward), MNT_REQUIRED_FN(m, Model_Backward)});
}

}  // namespace

absl::Status RefusePlugin(const std::string& origin, const std::string& reason) {
  return absl::FailedPreconditionError(absl::StrCat(origin, ": ", reason));
}

absl::Status ValidatePluginApi(const MNT_Plugin_Api* api,
                               const std::string& origin) {
  if (api == nullptr) {
    return Refuse(origin, "MNT_GetPluginApi returned NULL");
  }
  // Read nothing beyond struct_size: first make sure the version is there.
  if (api->struct_size < kPluginApiVersionEnd) {
    return Refuse(origin, absl::StrCat("MNT_Plugin_Api struct_size ",
                                       api->struct_size, " is smaller than the ",
                                       kPluginApiSize10, " bytes of ABI 1.0"));
  }
  const MNT_Api_Version& v = api->abi_version;
  if (v.struct_size < MNT_Api_Version_STRUCT_SIZE) {
    return Refuse(origin, absl::StrCat("MNT_Api_Version struct_size ",
                                       v.struct_size, " is smaller than the ",
                                       MNT_Api_Version_STRUCT_SIZE,
                                       " bytes of ABI 1.0"));
  }
  const std::string plugin_version =
      absl::StrCat(v.major_version, ".", v.minor_version);
  if (v.major_version != MNT_ABI_MAJOR) {
    return Refuse(origin,
                  absl::StrCat("plugin built against ABI ", plugin_version,
                               ", incompatible with this trainer's ",
                               kAbiVersion, " (major versions differ); rebuild "
                               "the plugin against ABI ",
                               MNT_ABI_MAJOR, ".x"));
  }
  if (v.minor_version < 0) {
    return Refuse(origin, absl::StrCat("invalid ABI minor version ",
                                       v.minor_version));
  }
  if (v.minor_version > MNT_ABI_MINOR) {
    return Refuse(origin, absl::StrCat("plugin built against ABI ",
                                       plugin_version, ", newer than this "
                                       "trainer's ", kAbiVersion,
                                       "; upgrade the trainer"));
  }
  absl::Status s = CheckApiSize(origin, "MNT_Plugin_Api", api->struct_size,
                                kPluginApiSize10);
  if (!s.ok()) return s;

  const int32_t raw_kind = sdk::RawEnum(api->kind);
  const char* kind = PluginKindName(raw_kind);
  if (!IsPluginKind(raw_kind)) {
    return Refuse(origin, absl::StrCat("invalid plugin kind ", raw_kind));
  }
  if (api->name == nullptr || api->name[0] == '\0') {
    return Refuse(origin, absl::StrCat(kind, " plugin name is empty"));
  }
  if (!IsValidPluginName(api->name)) {
    return Refuse(origin, absl::StrCat(kind, " plugin name '", api->name,
                                       "' has characters outside "
                                       "[A-Za-z0-9_-]"));
  }
  s = CheckRequired(origin, "MNT_Plugin_Api",
                    {MNT_REQUIRED_FN(api, Error_Destroy),
                     MNT_REQUIRED_FN(api, Error_Message),
                     MNT_REQUIRED_FN(api, Error_GetCode)});
  if (!s.ok()) return s;

  // The extension chain (ABI 1.9's headers for a 1.9 plugin): a malformed
  // one would be misread by every later FindExtension / HasCapability.
  if (sdk::Status chain = sdk::CheckExtensionChain(api); !chain.ok()) {
    return Refuse(origin, absl::StrCat(kind, " plugin '", api->name,
                                       "' has a malformed extension chain: ",
                                       chain.message()));
  }

  // Exactly the sub-API matching `kind` is set.
  const void* subs[] = {api->backend, api->precision, api->model};
  const MNT_PluginKind sub_kinds[] = {MNT_PLUGIN_KIND_BACKEND,
                                      MNT_PLUGIN_KIND_PRECISION,
                                      MNT_PLUGIN_KIND_MODEL};
  for (int i = 0; i < 3; ++i) {
    const bool own = sub_kinds[i] == api->kind;
    if (own && subs[i] == nullptr) {
      return Refuse(origin, absl::StrCat(kind, " plugin '", api->name,
                                         "' has a NULL ", kind, " API"));
    }
    if (!own && subs[i] != nullptr) {
      return Refuse(origin, absl::StrCat(kind, " plugin '", api->name,
                                         "' also sets the ",
                                         PluginKindName(sub_kinds[i]),
                                         " API"));
    }
  }
  switch (api->kind) {
    case MNT_PLUGIN_KIND_BACKEND:
      return ValidateBackendApi(origin, api->backend);
    case MNT_PLUGIN_KIND_PRECISION:
      return ValidatePrecisionApi(origin, api->precision);
    case MNT_PLUGIN_KIND_MODEL:
      return ValidateModelApi(origin, api->model);
    default:
      return absl::InternalError("unreachable");
  }
}

bool HasEvents(const MNT_Plugin_Api* plugin) {
  if (plugin == nullptr || plugin->kind != MNT_PLUGIN_KIND_BACKEND ||
      plugin->backend == nullptr) {
    return false;
  }
  const MNT_Backend_Api* b = plugin->backend;
  return MNT_HAS_FIELD(b, MNT_Backend_Api, Event_Destroy) &&
         b->Event_Create != nullptr && b->Event_Record != nullptr &&
         b->Event_ElapsedTime != nullptr && b->Event_Destroy != nullptr;
}

}  // namespace mnt::trainer

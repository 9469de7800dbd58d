// Mantissa plugin SDK: does a plugin offer an optional operand or behaviour
// (MNT_Capability, ABI 1.9)?
//
//   if (sdk::HasCapability(backend_plugin, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR)) ...
//
// A plugin built against ABI 1.9 or later is answered from its capabilities
// extension (none: it offers no capability). One built against an older 1.x
// has no extension and is answered from kCapabilities' `since_minor`, the
// minor that introduced each capability: the one place left where a minor
// stands for a capability. Optional ops are not capabilities: ask
// Backend_GetOpSupport (BackendInstance::Supports).
#ifndef MANTISSA_PLUGINS_SDK_CAPABILITIES_H_
#define MANTISSA_PLUGINS_SDK_CAPABILITIES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// What each capability is: its spelling, the plugin kind that offers it and
// the minor that introduced it (which a pre-1.9 plugin's minor implies). A
// capability added in 1.9 or later gets the minor that added it: no pre-1.9
// plugin reaches it, so only advertising plugins offer it.
struct CapabilityInfo {
  MNT_Capability capability;
  const char* name;  // without the MNT_CAPABILITY_ prefix
  MNT_PluginKind kind;
  int32_t since_minor;
};

// Every capability, in enum order (checked below against abi_enum.h's list,
// which a -Wswitch check keeps complete).
inline constexpr CapabilityInfo kCapabilities[] = {
    {MNT_CAPABILITY_ADAMW_STEP_COUNTER, "ADAMW_STEP_COUNTER", MNT_PLUGIN_KIND_BACKEND, 4},
    {MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE, "AMP_UPDATE_SCALE_RECIPE", MNT_PLUGIN_KIND_BACKEND,
     5},
    {MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER, "CROSS_ENTROPY_GRAD_MULTIPLIER",
     MNT_PLUGIN_KIND_BACKEND, 6},
    {MNT_CAPABILITY_OPTIMIZER_DEVICE_LR, "OPTIMIZER_DEVICE_LR", MNT_PLUGIN_KIND_BACKEND, 7},
    {MNT_CAPABILITY_STOCHASTIC_ROUNDING, "STOCHASTIC_ROUNDING", MNT_PLUGIN_KIND_BACKEND, 7},
    {MNT_CAPABILITY_PRECISION_OPTIONS, "PRECISION_OPTIONS", MNT_PLUGIN_KIND_PRECISION, 5},
    {MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER, "MODEL_DEVICE_LOSS_MULTIPLIER",
     MNT_PLUGIN_KIND_MODEL, 6},
    {MNT_CAPABILITY_MODEL_FP8_GEMMS, "MODEL_FP8_GEMMS", MNT_PLUGIN_KIND_MODEL, 10},
    {MNT_CAPABILITY_OPTIMIZER_PIECES, "OPTIMIZER_PIECES", MNT_PLUGIN_KIND_BACKEND, 11},
    {MNT_CAPABILITY_MODEL_GRADIENT_READY, "MODEL_GRADIENT_READY", MNT_PLUGIN_KIND_MODEL, 11},
    {MNT_CAPABILITY_MODEL_FROZEN_PARAMS, "MODEL_FROZEN_PARAMS", MNT_PLUGIN_KIND_MODEL, 13},
    {MNT_CAPABILITY_MODEL_LORA, "MODEL_LORA", MNT_PLUGIN_KIND_MODEL, 13},
};

// Every enumerator but INVALID has exactly one entry, in enum order.
constexpr bool CapabilityTableIsComplete() {
  size_t i = 0;
  for (MNT_Capability c : AbiEnum<MNT_Capability>::kValues) {
    if (c == MNT_CAPABILITY_INVALID) continue;
    if (i >= sizeof(kCapabilities) / sizeof(kCapabilities[0]) ||
        kCapabilities[i].capability != c || kCapabilities[i].since_minor < 1)
      return false;
    ++i;
  }
  return i == sizeof(kCapabilities) / sizeof(kCapabilities[0]);
}
static_assert(CapabilityTableIsComplete(),
              "every MNT_Capability needs its entry in kCapabilities, in enum order");

// The entry of `capability` (an int32 from the other side), or NULL for a
// value this SDK does not know.
inline const CapabilityInfo* FindCapabilityInfo(int32_t capability) {
  for (const CapabilityInfo& c : kCapabilities) {
    if (static_cast<int32_t>(c.capability) == capability) return &c;
  }
  return nullptr;
}

// "OPTIMIZER_DEVICE_LR"; "UNKNOWN_CAPABILITY" for a value not in the table.
inline const char* CapabilityName(int32_t capability) {
  const CapabilityInfo* c = FindCapabilityInfo(capability);
  return c != nullptr ? c->name : "UNKNOWN_CAPABILITY";
}

// The plugin's capabilities extension, or NULL (none, or a plugin built
// against ABI < 1.9). Its array is the plugin's static storage.
inline const MNT_Capabilities_Extension* FindCapabilitiesExtension(
    const MNT_Plugin_Api* plugin) {
  const MNT_Extension_Header* h = FindExtension(plugin, MNT_EXTENSION_TYPE_CAPABILITIES);
  if (h == nullptr || h->base.struct_size < MNT_Capabilities_Extension_STRUCT_SIZE) {
    return nullptr;
  }
  const auto* c = reinterpret_cast<const MNT_Capabilities_Extension*>(h);
  if (c->capabilities == nullptr && c->num_capabilities > 0) return nullptr;
  return c;
}

// Whether `plugin` offers `capability`: from its capabilities extension
// when built against ABI >= 1.9, else from the minor that introduced it.
inline bool HasCapability(const MNT_Plugin_Api* plugin, MNT_Capability capability) {
  if (plugin == nullptr) return false;
  if (HasExtensionHeaders(plugin)) {
    const MNT_Capabilities_Extension* c = FindCapabilitiesExtension(plugin);
    if (c == nullptr) return false;
    for (size_t i = 0; i < c->num_capabilities; ++i) {
      if (c->capabilities[i] == static_cast<int32_t>(capability)) return true;
    }
    return false;
  }
  // ABI 1.0-1.8: the legacy table.
  const CapabilityInfo* info = FindCapabilityInfo(capability);
  return info != nullptr && plugin->kind == info->kind &&
         plugin->abi_version.major_version == 1 &&
         plugin->abi_version.minor_version >= info->since_minor;
}

// For a message refusing `capability` to `plugin`: when the plugin claims
// ABI >= 1.9 but lists no capabilities at all and the capability predates
// 1.9, it may be a source written before 1.9 and rebuilt without saying so;
// the text (starting "; ") says how to keep what its old binary had.
// "" otherwise.
inline std::string RebuiltSourceHint(const MNT_Plugin_Api* plugin, MNT_Capability capability) {
  const CapabilityInfo* info = FindCapabilityInfo(capability);
  if (plugin == nullptr || info == nullptr || info->since_minor >= kExtensionsSinceMinor ||
      !HasExtensionHeaders(plugin) || FindCapabilitiesExtension(plugin) != nullptr) {
    return "";
  }
  return Format(
      "; it lists no capabilities: a source written against ABI 1.%d-1.%d that was "
      "rebuilt against newer headers keeps what its old binary had when built with "
      "-DMNT_ABI_SOURCE_MINOR=<the minor it was written against> (docs/abi.md section 1)",
      info->since_minor, kExtensionsSinceMinor - 1);
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_CAPABILITIES_H_

// Mantissa plugin SDK: reading a plugin's extension chain (ABI 1.9,
// MNT_Extension_Header) safely, as a host or a tool does.
//
//   if (const MNT_Extension_Header* h =
//           sdk::FindExtension(plugin, MNT_EXTENSION_TYPE_CAPABILITIES)) {
//     if (h->base.struct_size >= MNT_Capabilities_Extension_STRUCT_SIZE) ...
//   }
//
// (The collectives extension has its own client, which finds and checks
// it: collectives_client.h.)
//
// The chain starts at MNT_Plugin_Api.extension_start and ends at NULL. A
// reader follows at most kMaxExtensionChainLength links (so a cycle ends),
// stops at a link too short to hold `next`, skips one too short to hold the
// 1.9 header, and skips types it does not know. CheckExtensionChain says
// why a chain is malformed; the loader refuses such a plugin with it.
// Extensions hang only on MNT_Plugin_Api (the sub-API tables' and Args'
// extension_start stay NULL/unread).
#ifndef MANTISSA_PLUGINS_SDK_EXTENSION_CHAIN_H_
#define MANTISSA_PLUGINS_SDK_EXTENSION_CHAIN_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/collectives_table.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// The most links a reader follows; a longer chain is malformed (a cycle).
inline constexpr int kMaxExtensionChainLength = 64;

// The bytes of a link up to and including `next`: less and the link cannot
// be followed.
inline constexpr size_t kExtensionBaseSize = MNT_STRUCT_SIZE(MNT_Extension_Base, next);

// The minor that defined MNT_Extension_Header and the first extension
// types: a plugin built against an older 1.x has no extension a host knows.
inline constexpr int32_t kExtensionsSinceMinor = 9;

// Whether the links of the plugin's chain carry MNT_Extension_Header.
inline bool HasExtensionHeaders(const MNT_Plugin_Api* plugin) {
  return plugin != nullptr && plugin->abi_version.major_version == 1 &&
         plugin->abi_version.minor_version >= kExtensionsSinceMinor;
}

// The first link, or NULL (also for a plugin too short to hold the field).
inline const MNT_Extension_Base* ExtensionStart(const MNT_Plugin_Api* plugin) {
  if (plugin == nullptr || !MNT_HAS_FIELD(plugin, MNT_Plugin_Api, extension_start)) {
    return nullptr;
  }
  return plugin->extension_start;
}

// Calls fn(const MNT_Extension_Header&) for every link that holds a 1.9
// header, in chain order, until fn returns false; unknown types included
// (the caller skips what it does not know). Follows at most
// kMaxExtensionChainLength links and none past one too short for `next`.
// Nothing for a plugin built against ABI < 1.9.
template <typename Fn>
void ForEachExtension(const MNT_Plugin_Api* plugin, Fn fn) {
  if (!HasExtensionHeaders(plugin)) return;
  const MNT_Extension_Base* link = ExtensionStart(plugin);
  for (int i = 0; link != nullptr && i < kMaxExtensionChainLength; ++i) {
    if (link->struct_size < kExtensionBaseSize) return;
    if (link->struct_size >= MNT_Extension_Header_STRUCT_SIZE) {
      if (!fn(*reinterpret_cast<const MNT_Extension_Header*>(link))) return;
    }
    link = link->next;
  }
}

// The first extension of `type` on the plugin's chain (a header whose
// base.struct_size the caller checks against the fields it reads), or NULL;
// always NULL for a plugin built against ABI < 1.9.
inline const MNT_Extension_Header* FindExtension(const MNT_Plugin_Api* plugin,
                                                 MNT_ExtensionType type) {
  const MNT_Extension_Header* found = nullptr;
  ForEachExtension(plugin, [&](const MNT_Extension_Header& h) {
    if (RawEnum(h.base.type) != static_cast<int32_t>(type)) return true;
    found = &h;
    return false;
  });
  return found;
}

// The extension's name for messages: "" when NULL.
inline const char* ExtensionName(const MNT_Extension_Header& h) {
  return h.name != nullptr ? h.name : "";
}

// Why the chain of `plugin` is malformed, or OK. Links: at most
// kMaxExtensionChainLength (more is a cycle or garbage), each long enough
// for `next`. From a plugin built against 1.9 on, each link also carries
// the header (a name, version >= 1), and an extension of a type this SDK
// knows is at least that type's version-1 size and appears once; the
// capabilities extension lists only valid values (> 0) and has its array
// when it lists any; the model data extension (1.12) is a model's and
// declares at least one kind, each > 0; the collectives extension has its version-1 calls
// (CheckCollectivesTable, the rule CollectivesClient::Find applies too).
// Older plugins' links (ABI 1.0-1.8 defined no types) are checked for the
// chain's shape only.
inline Status CheckExtensionChain(const MNT_Plugin_Api* plugin) {
  const bool headers = HasExtensionHeaders(plugin);
  const MNT_Extension_Base* link = ExtensionStart(plugin);
  bool seen_capabilities = false, seen_collectives = false, seen_model_data = false;
  for (int i = 0; link != nullptr; ++i, link = link->next) {
    if (i == kMaxExtensionChainLength) {
      return InvalidArgument(Format(
          "extension chain is longer than %d links (a cycle?)", kMaxExtensionChainLength));
    }
    if (link->struct_size < kExtensionBaseSize) {
      return InvalidArgument(Format("extension %d: struct_size %zu is smaller than the %zu "
                                    "bytes of MNT_Extension_Base",
                                    i, link->struct_size, kExtensionBaseSize));
    }
    if (!headers) continue;
    if (link->struct_size < MNT_Extension_Header_STRUCT_SIZE) {
      return InvalidArgument(Format("extension %d: struct_size %zu is smaller than the %zu "
                                    "bytes of MNT_Extension_Header",
                                    i, link->struct_size,
                                    size_t{MNT_Extension_Header_STRUCT_SIZE}));
    }
    const auto& h = *reinterpret_cast<const MNT_Extension_Header*>(link);
    const int32_t type = RawEnum(h.base.type);
    if (h.name == nullptr || h.name[0] == '\0') {
      return InvalidArgument(Format("extension %d (type %d) has no name", i, type));
    }
    if (h.version < 1) {
      return InvalidArgument(
          Format("extension '%s' has version %d (versions start at 1)", h.name, h.version));
    }
    size_t needed = 0;
    bool* seen = nullptr;
    if (type == MNT_EXTENSION_TYPE_CAPABILITIES) {
      needed = MNT_Capabilities_Extension_STRUCT_SIZE;
      seen = &seen_capabilities;
    } else if (type == MNT_EXTENSION_TYPE_COLLECTIVES) {
      needed = MNT_Collectives_Extension_V1_STRUCT_SIZE;
      seen = &seen_collectives;
    } else if (type == MNT_EXTENSION_TYPE_MODEL_DATA) {
      needed = MNT_ModelData_Extension_STRUCT_SIZE;
      seen = &seen_model_data;
    } else {
      continue;  // a type this SDK does not know: skipped
    }
    if (link->struct_size < needed) {
      return InvalidArgument(Format("extension '%s': struct_size %zu is smaller than the %zu "
                                    "bytes of its version 1",
                                    h.name, link->struct_size, needed));
    }
    if (*seen) {
      return InvalidArgument(Format("extension '%s': a second extension of type %d on the "
                                    "chain",
                                    h.name, type));
    }
    *seen = true;
    if (type == MNT_EXTENSION_TYPE_COLLECTIVES) MNT_RETURN_IF_ERROR(CheckCollectivesTable(h));
    if (type == MNT_EXTENSION_TYPE_CAPABILITIES) {
      const auto& c = reinterpret_cast<const MNT_Capabilities_Extension&>(h);
      if (c.num_capabilities > 0 && c.capabilities == nullptr) {
        return InvalidArgument(Format("extension '%s': num_capabilities %zu with a NULL array",
                                      h.name, c.num_capabilities));
      }
      for (size_t k = 0; k < c.num_capabilities; ++k) {
        if (c.capabilities[k] <= 0) {
          return InvalidArgument(Format("extension '%s': capabilities[%zu] is %d (values "
                                        "start at 1)",
                                        h.name, k, c.capabilities[k]));
        }
      }
    }
    if (type == MNT_EXTENSION_TYPE_MODEL_DATA) {
      const auto& d = reinterpret_cast<const MNT_ModelData_Extension&>(h);
      if (plugin->kind != MNT_PLUGIN_KIND_MODEL) {
        return InvalidArgument(Format("extension '%s': only a model declares the data it takes",
                                      h.name));
      }
      if (d.num_kinds == 0 || d.kinds == nullptr) {
        return InvalidArgument(Format("extension '%s': declares no kind of data (num_kinds %zu, "
                                      "kinds %s)",
                                      h.name, d.num_kinds, d.kinds == nullptr ? "NULL" : "set"));
      }
      for (size_t k = 0; k < d.num_kinds; ++k) {
        if (d.kinds[k] <= 0) {
          return InvalidArgument(Format("extension '%s': kinds[%zu] is %d (values start at 1)",
                                        h.name, k, d.kinds[k]));
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_EXTENSION_CHAIN_H_

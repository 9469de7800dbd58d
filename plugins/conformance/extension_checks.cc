// The plugin's extension chain (ABI 1.9), for every kind: well-formed (as
// the loader checks it), and a capabilities extension that lists only
// capabilities this host knows, of the plugin's own kind, each once. What
// a plugin advertises is then exercised by the kind's own checks (a
// backend's device-lr and stochastic-rounding kernels, a precision's own
// options, a model's device loss multiplier).
#include <set>
#include <string>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/status.h"
#include "plugins/conformance/conformance.h"

namespace mnt::conformance {

void CheckExtensions(const MNT_Plugin_Api* plugin, Report* r) {
  const std::string n = "extensions/";
  const sdk::Status chain = sdk::CheckExtensionChain(plugin);
  r->Check(n + "chain_well_formed", chain.ok() ? "" : chain.message());
  if (!chain.ok()) return;
  if (!sdk::HasExtensionHeaders(plugin)) {
    r->Skip(n + "capabilities",
            sdk::Format("built against ABI %d.%d: no extensions; its capabilities follow "
                        "from its minor",
                        plugin->abi_version.major_version, plugin->abi_version.minor_version));
    return;
  }
  const MNT_Capabilities_Extension* caps = sdk::FindCapabilitiesExtension(plugin);
  if (caps == nullptr) {
    r->Skip(n + "capabilities",
            "no capabilities extension: the plugin offers no optional operand or behaviour");
    return;
  }
  std::string why;
  std::set<int32_t> seen;
  for (size_t i = 0; i < caps->num_capabilities && why.empty(); ++i) {
    const int32_t c = caps->capabilities[i];
    const sdk::CapabilityInfo* info = sdk::FindCapabilityInfo(c);
    if (info == nullptr) {
      why = sdk::Format("capabilities[%zu] = %d is not a capability of ABI %d.%d", i, c,
                        MNT_ABI_MAJOR, MNT_ABI_MINOR);
    } else if (info->kind != plugin->kind) {
      const char* kind = sdk::AbiEnum<MNT_PluginKind>::Name(info->kind);
      why = sdk::Format("capabilities[%zu] = %s is a capability of %s plugins", i, info->name,
                        kind != nullptr ? kind : "other");
    } else if (!seen.insert(c).second) {
      why = sdk::Format("capabilities[%zu] = %s is listed twice", i, info->name);
    }
  }
  r->Check(n + "capabilities_known_and_of_this_kind", why);
}

}  // namespace mnt::conformance

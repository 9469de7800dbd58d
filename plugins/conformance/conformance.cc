#include "plugins/conformance/conformance.h"

namespace mnt::conformance {

void RunConformance(const MNT_Plugin_Api* plugin, const std::string& options,
                    uint64_t seed, HostExchange* host, Report* report) {
  CheckExtensions(plugin, report);
  switch (plugin->kind) {
    case MNT_PLUGIN_KIND_BACKEND:
      CheckBackendPlugin(plugin, options, seed, report);
      CheckCollectives(plugin, options, seed, host, report);
      break;
    case MNT_PLUGIN_KIND_PRECISION:
      CheckPrecisionPlugin(plugin, options, seed, report);
      break;
    case MNT_PLUGIN_KIND_MODEL:
      CheckModelPlugin(plugin, options, seed, report);
      break;
    default:
      report->Fail("kind", "not a backend, precision or model plugin");
  }
}

}  // namespace mnt::conformance

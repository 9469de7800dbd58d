// plugin_info <file.so>: what a Mantissa plugin is and what it offers.
//
//   tools/bazel run //tools/plugin_info -- /path/to/mnt_backend_cpu.so
//
// Prints name, kind, ABI version, description, the extensions on its chain
// (name and version), its capabilities (ABI 1.9: the ones it advertises;
// an older plugin's from its minor), a backend's device and supported ops,
// a precision's policy, the kinds of data a model declares (ABI 1.12), and
// the exported symbols.
// The plugin is loaded in a child process first, so a file that is not a
// Mantissa plugin, or one that crashes while loading, is reported in one line
// ("plugin_info: error: ...") with exit status 1.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/data_kinds.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/precision_client.h"
#include "plugins/sdk/tensor.h"
#include "tools/plugin_info/plugin_probe.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::tools {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "plugin_info: error: %s\n", message.c_str());
  return 1;
}

const char* LossScalingName(MNT_LossScaling s) {
  switch (s) {
    case MNT_LOSS_SCALING_NONE: return "none";
    case MNT_LOSS_SCALING_DYNAMIC: return "dynamic";
    case MNT_LOSS_SCALING_STATIC: return "static";
    default: return "invalid";
  }
}

const char* ComputeName(MNT_ComputeMode m) {
  switch (m) {
    case MNT_COMPUTE_F32: return "f32";
    case MNT_COMPUTE_TF32: return "tf32";
    case MNT_COMPUTE_BF16: return "bf16";
    case MNT_COMPUTE_F16: return "f16";
    default: return "invalid";
  }
}

// "capabilities v1, collectives v1" (name and version of each extension on
// the chain, in order; a type this host does not know shows its number).
void PrintExtensions(const MNT_Plugin_Api* api) {
  std::vector<std::string> names;
  sdk::ForEachExtension(api, [&](const MNT_Extension_Header& h) {
    const int32_t type = sdk::RawEnum(h.base.type);
    std::string name = sdk::ExtensionName(h);
    if (!sdk::IsKnownEnum<MNT_ExtensionType>(type)) {
      name += " (unknown type " + std::to_string(type) + ")";
    }
    names.push_back(name + " v" + std::to_string(h.version));
    return true;
  });
  std::printf("extensions:   %s\n", names.empty() ? "none" : absl::StrJoin(names, ", ").c_str());
}

// The capabilities the host finds: the plugin's list (ABI >= 1.9) or those
// its minor implies (older plugins).
void PrintCapabilities(const MNT_Plugin_Api* api) {
  std::vector<std::string> names;
  if (sdk::HasExtensionHeaders(api)) {
    if (const MNT_Capabilities_Extension* c = sdk::FindCapabilitiesExtension(api)) {
      for (size_t i = 0; i < c->num_capabilities; ++i) {
        const int32_t value = c->capabilities[i];
        names.push_back(sdk::FindCapabilityInfo(value) != nullptr
                            ? std::string(sdk::CapabilityName(value))
                            : "unknown " + std::to_string(value));
      }
    }
    std::printf("capabilities: %s\n",
                names.empty() ? "none" : absl::StrJoin(names, " ").c_str());
    return;
  }
  for (const sdk::CapabilityInfo& c : sdk::kCapabilities) {
    if (sdk::HasCapability(api, c.capability)) names.push_back(c.name);
  }
  std::printf("capabilities: %s (implied by ABI %d.%d: no capabilities extension)\n",
              names.empty() ? "none" : absl::StrJoin(names, " ").c_str(),
              api->abi_version.major_version, api->abi_version.minor_version);
}

// ABI 1.12: the kinds of data a model declares it trains on.
void PrintModel(const MNT_Plugin_Api* api) {
  std::vector<std::string> names;
  for (MNT_DataKind k : sdk::DeclaredDataKinds(api)) names.push_back(sdk::DataKindName(k));
  std::printf("data:         %s\n",
              names.empty() ? "not declared (Model_Create decides)"
                            : absl::StrJoin(names, " ").c_str());
}

void PrintBackend(const MNT_Plugin_Api* api) {
  std::printf("events:       %s\n", trainer::HasEvents(api) ? "yes" : "no");
  std::unique_ptr<sdk::BackendInstance> backend;
  sdk::Status s = sdk::BackendInstance::Create(api, "", &backend);
  if (!s.ok()) {
    std::printf("device:       unavailable (%s)\n", s.message().c_str());
    return;
  }
  MNT_Backend_GetInfo_Args info;
  if (backend->GetInfo(&info).ok()) {
    std::printf("device:       %s (%lld bytes, %s)\n",
                info.device_name ? info.device_name : "?",
                static_cast<long long>(info.total_memory_bytes),
                info.host_addressable ? "host addressable" : "device memory");
  }
  std::vector<std::string> ops;
  for (int op = 1; op < 256; ++op) {
    const char* name = sdk::OpName(static_cast<MNT_Op>(op));
    if (std::string(name) == "UNKNOWN_OP") continue;
    if (backend->Supports(static_cast<MNT_Op>(op))) ops.push_back(name);
  }
  std::printf("ops:          %s\n", absl::StrJoin(ops, " ").c_str());
}

void PrintPrecision(const MNT_Plugin_Api* api) {
  MNT_Precision_GetPolicy_Args p;
  sdk::Status s = sdk::PrecisionClient(api).GetPolicy(&p);
  if (!s.ok()) {
    std::printf("policy:       error (%s)\n", s.message().c_str());
    return;
  }
  std::printf(
      "policy:       weights %s, master weights %s, gradients %s, "
      "activations %s, optimizer state %s, matmul %s, loss scaling %s\n",
      sdk::DTypeName(p.weight_dtype),
      p.master_weight_dtype == MNT_DTYPE_INVALID
          ? "(none)"
          : sdk::DTypeName(p.master_weight_dtype),
      sdk::DTypeName(p.gradient_dtype), sdk::DTypeName(p.activation_dtype),
      sdk::DTypeName(p.optimizer_state_dtype), ComputeName(p.matmul_compute),
      LossScalingName(p.loss_scaling));
}

int Main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]).rfind("-", 0) == 0) {
    std::fprintf(stderr, "usage: plugin_info <file.so>\n");
    return 2;
  }
  const std::string path = argv[1];
  std::vector<std::string> symbols;
  if (absl::Status s = ExportedSymbols(path, &symbols); !s.ok()) {
    return Fail(std::string(s.message()) + "; not a Mantissa plugin");
  }
  if (absl::Status s = ProbePluginInChild(path); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  trainer::PluginRegistry registry({});
  if (absl::Status s = registry.LoadFile(path); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const MNT_Plugin_Api* api = registry.Loaded().front()->api;
  std::printf("file:         %s\n", path.c_str());
  std::printf("name:         %s\n", api->name);
  std::printf("kind:         %s\n", trainer::PluginKindName(api->kind));
  std::printf("abi:          %d.%d (this host: %d.%d)\n",
              api->abi_version.major_version, api->abi_version.minor_version,
              MNT_ABI_MAJOR, MNT_ABI_MINOR);
  std::printf("description:  %s\n", api->description ? api->description : "");
  std::printf("initializer:  %s\n", api->Plugin_Initialize ? "yes" : "no");
  PrintExtensions(api);
  PrintCapabilities(api);
  switch (api->kind) {
    case MNT_PLUGIN_KIND_BACKEND: PrintBackend(api); break;
    case MNT_PLUGIN_KIND_PRECISION: PrintPrecision(api); break;
    case MNT_PLUGIN_KIND_MODEL: PrintModel(api); break;  // its passes: plugin_conformance
    default: break;
  }
  std::printf("exports:      %s\n", absl::StrJoin(symbols, " ").c_str());
  return 0;
}

}  // namespace
}  // namespace mnt::tools

int main(int argc, char** argv) { return mnt::tools::Main(argc, argv); }

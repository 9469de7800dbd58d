#include "trainer/cli/run_header.h"

#include <algorithm>
#include <chrono>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/util/json_util.h"

namespace mnt::trainer {

RunHeader MakeRunHeader(const TrainConfig& config, const Trainer& trainer,
                        const PluginRegistry& registry, int targets_per_example,
                        const std::string& resumed_from) {
  RunHeader h;
  h.wall_time = std::chrono::duration<double>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  google::protobuf::util::JsonPrintOptions json;
  json.always_print_primitive_fields = true;  // a run's full settings, defaults included
  json.preserve_proto_field_names = true;     // the names flags and --config use
  if (!google::protobuf::util::MessageToJsonString(config, &h.config_json, json).ok()) {
    h.config_json = "{}";
  }
  h.config_text = ConfigToText(config);
  h.backend = trainer.Report().backend;
  h.device = trainer.device();
  h.precision = trainer.precision();
  h.model = config.model();
  h.num_parameters = trainer.num_parameters();
  h.total_steps = config.steps();
  h.start_step = trainer.step();
  h.resumed_from = resumed_from;
  h.loss_scaling_reason = trainer.loss_scaling_description();
  h.loss_scaling = h.loss_scaling_reason.empty() ? "none"
                   : trainer.device_loss_scaling() ? "device"
                                                   : "host";
  h.samples_per_step = config.batch_size() * std::max<int64_t>(1, config.grad_accum_steps());
  h.targets_per_example = std::max(1, targets_per_example);
  // The plugins this run uses (the registry may also hold ones it only
  // probed, such as cuda under --device=auto on a machine without a GPU).
  const std::pair<MNT_PluginKind, std::string> used[] = {
      {MNT_PLUGIN_KIND_BACKEND, trainer.device()},
      {MNT_PLUGIN_KIND_PRECISION, trainer.precision()},
      {MNT_PLUGIN_KIND_MODEL, config.model()}};
  for (const auto& [kind, name] : used) {
    for (const LoadedPlugin* p : registry.Loaded()) {
      if (p->api->kind != kind || name != p->api->name) continue;
      h.plugins.push_back({PluginKindName(kind), p->api->name,
                           absl::StrCat(p->api->abi_version.major_version, ".",
                                        p->api->abi_version.minor_version),
                           p->origin, p->api->description ? p->api->description : ""});
    }
  }
  h.versions = {
      {"mantissa_abi", absl::StrCat(MNT_ABI_MAJOR, ".", MNT_ABI_MINOR)},
      {"protobuf", google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION)},
      {"abseil", absl::StrCat(ABSL_LTS_RELEASE_VERSION, ".", ABSL_LTS_RELEASE_PATCH_LEVEL)},
#if defined(__clang__)
      {"compiler", absl::StrCat("clang ", __clang_version__)},
#elif defined(__GNUC__)
      {"compiler", absl::StrCat("gcc ", __VERSION__)},
#endif
  };
  return h;
}

}  // namespace mnt::trainer

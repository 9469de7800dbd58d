#include "plugins/backends/cuda/backend_options.h"

#include <string>

#include "plugins/sdk/options.h"

namespace mnt::cuda {

const char* AttentionImplName(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::kCudnn: return "cudnn";
    case AttentionImpl::kFallback: return "fallback";
    default: return "auto";
  }
}

sdk::Status ParseCudaBackendOptions(const char* text, CudaBackendOptions* out) {
  constexpr char kContext[] = "cuda backend options";
  sdk::Options options;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, kContext, &options));
  MNT_RETURN_IF_ERROR(options.CheckKnown({"attention", "cuda_graphs", "graph_workspace_mb"}));
  CudaBackendOptions parsed;
  if (options.Has("attention")) {
    std::string value;
    MNT_RETURN_IF_ERROR(options.GetString("attention", &value));
    if (value == "auto") {
      parsed.attention = AttentionImpl::kAuto;
    } else if (value == "cudnn") {
      parsed.attention = AttentionImpl::kCudnn;
    } else if (value == "fallback") {
      parsed.attention = AttentionImpl::kFallback;
    } else {
      return sdk::InvalidArgument(sdk::Format(
          "%s: attention='%s' is not one of auto, cudnn, fallback", kContext,
          value.c_str()));
    }
  }
  if (options.Has("cuda_graphs")) {
    std::string value;
    MNT_RETURN_IF_ERROR(options.GetString("cuda_graphs", &value));
    if (value != "on" && value != "off") {
      return sdk::InvalidArgument(sdk::Format(
          "%s: cuda_graphs='%s' is not one of on, off", kContext, value.c_str()));
    }
    parsed.cuda_graphs = value == "on";
  }
  if (options.Has("graph_workspace_mb")) {
    long long mb = 0;
    MNT_RETURN_IF_ERROR(options.GetInt("graph_workspace_mb", &mb));
    if (mb < 0 || mb > (1ll << 30)) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: graph_workspace_mb=%lld is not a size in MiB (0 or more)", kContext, mb));
    }
    parsed.graph_workspace_mb = mb;
  }
  *out = parsed;
  return sdk::Status::Ok();
}

}  // namespace mnt::cuda

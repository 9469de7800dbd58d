#include "plugins/backends/cuda/backend_options.h"

#include <string>

#include "plugins/sdk/options.h"

namespace mnt::cuda {

const char* AttentionImplName(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::kCudnn: return "cudnn";
    case AttentionImpl::kGemm: return "gemm";
    case AttentionImpl::kFallback: return "fallback";
    default: return "auto";
  }
}

namespace {

constexpr char kContext[] = "cuda backend options";

// key=on|off into *out; an absent key leaves *out (the default) as it is.
sdk::Status ParseOnOff(const sdk::Options& options, const char* key, bool* out) {
  if (!options.Has(key)) return sdk::Status::Ok();
  std::string value;
  MNT_RETURN_IF_ERROR(options.GetString(key, &value));
  if (value != "on" && value != "off") {
    return sdk::InvalidArgument(
        sdk::Format("%s: %s='%s' is not one of on, off", kContext, key, value.c_str()));
  }
  *out = value == "on";
  return sdk::Status::Ok();
}

}  // namespace

sdk::Status ParseCudaBackendOptions(const char* text, CudaBackendOptions* out) {
  sdk::Options options;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, kContext, &options));
  MNT_RETURN_IF_ERROR(
      options.CheckKnown({"attention", "attention_tf32", "cuda_graphs", "graph_workspace_mb"}));
  CudaBackendOptions parsed;
  if (options.Has("attention")) {
    std::string value;
    MNT_RETURN_IF_ERROR(options.GetString("attention", &value));
    if (value == "auto") {
      parsed.attention = AttentionImpl::kAuto;
    } else if (value == "cudnn") {
      parsed.attention = AttentionImpl::kCudnn;
    } else if (value == "gemm") {
      parsed.attention = AttentionImpl::kGemm;
    } else if (value == "fallback") {
      parsed.attention = AttentionImpl::kFallback;
    } else {
      return sdk::InvalidArgument(sdk::Format(
          "%s: attention='%s' is not one of auto, cudnn, gemm, fallback", kContext,
          value.c_str()));
    }
  }
  MNT_RETURN_IF_ERROR(ParseOnOff(options, "attention_tf32", &parsed.attention_tf32));
  MNT_RETURN_IF_ERROR(ParseOnOff(options, "cuda_graphs", &parsed.cuda_graphs));
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

#include "models/mlp/mlp_options.h"

#include <cmath>
#include <string>

#include "plugins/sdk/options.h"

namespace mnt::mlp {

sdk::Status ParseMlpOptions(const char* text, MlpOptions* out) {
  constexpr const char* kContext = "mlp options";
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, kContext, &opts));
  MNT_RETURN_IF_ERROR(opts.CheckKnown({"hidden", "activation", "init"}));
  MlpOptions result;

  if (opts.Has("hidden")) {
    std::vector<long long> widths;
    MNT_RETURN_IF_ERROR(opts.GetIntList("hidden", &widths));
    if (widths.empty()) {
      return sdk::InvalidArgument(
          "mlp options: hidden='' lists no widths (e.g. hidden=128:64)");
    }
    if (widths.size() > kMaxHiddenLayers) {
      return sdk::InvalidArgument(sdk::Format(
          "mlp options: hidden lists %zu layers, at most %zu are supported",
          widths.size(), kMaxHiddenLayers));
    }
    result.hidden.clear();
    for (size_t i = 0; i < widths.size(); ++i) {
      if (widths[i] < 1 || widths[i] > kMaxWidth) {
        return sdk::InvalidArgument(sdk::Format(
            "mlp options: hidden width %zu is %lld, expected 1..%lld", i,
            widths[i], static_cast<long long>(kMaxWidth)));
      }
      result.hidden.push_back(widths[i]);
    }
  }

  std::string activation = "relu";
  MNT_RETURN_IF_ERROR(opts.GetString("activation", &activation));
  if (activation == "relu") {
    result.activation = MNT_ACTIVATION_RELU;
  } else if (activation == "gelu") {
    result.activation = MNT_ACTIVATION_GELU_TANH;
  } else {
    return sdk::InvalidArgument(sdk::Format(
        "mlp options: activation='%s' is not relu or gelu",
        activation.c_str()));
  }

  std::string init =
      result.activation == MNT_ACTIVATION_RELU ? "he" : "lecun";
  MNT_RETURN_IF_ERROR(opts.GetString("init", &init));
  if (init == "he") {
    result.init = WeightInit::kHe;
  } else if (init == "xavier") {
    result.init = WeightInit::kXavier;
  } else if (init == "lecun") {
    result.init = WeightInit::kLecun;
  } else {
    return sdk::InvalidArgument(sdk::Format(
        "mlp options: init='%s' is not he, xavier or lecun", init.c_str()));
  }
  *out = result;
  return sdk::Status::Ok();
}

float WeightInitStd(WeightInit init, int64_t fan_in, int64_t fan_out) {
  switch (init) {
    case WeightInit::kHe:
      return static_cast<float>(std::sqrt(2.0 / fan_in));
    case WeightInit::kXavier:
      return static_cast<float>(std::sqrt(2.0 / (fan_in + fan_out)));
    case WeightInit::kLecun:
      return static_cast<float>(std::sqrt(1.0 / fan_in));
  }
  return 0.0f;
}

}  // namespace mnt::mlp

#include "models/cnn/cnn_options.h"

#include "plugins/sdk/options.h"

namespace mnt::cnn {

sdk::Status ParseCnnOptions(const char* text, CnnOptions* out) {
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, "cnn options", &opts));
  MNT_RETURN_IF_ERROR(opts.CheckKnown({"depth", "width", "bn_momentum"}));
  CnnOptions result;
  long long depth = result.depth, width = result.width;
  double momentum = result.bn_momentum;
  MNT_RETURN_IF_ERROR(opts.GetInt("depth", &depth));
  MNT_RETURN_IF_ERROR(opts.GetInt("width", &width));
  MNT_RETURN_IF_ERROR(opts.GetDouble("bn_momentum", &momentum));
  if (depth < 0 || depth > kMaxDepth) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn options: depth is %lld, expected 0..%lld", depth,
        static_cast<long long>(kMaxDepth)));
  }
  if (width < 1 || width > kMaxWidth) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn options: width is %lld, expected 1..%lld", width,
        static_cast<long long>(kMaxWidth)));
  }
  if (!(momentum >= 0.0 && momentum <= 1.0)) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn options: bn_momentum is %g, expected 0..1", momentum));
  }
  result.depth = depth;
  result.width = width;
  result.bn_momentum = static_cast<float>(momentum);
  *out = result;
  return sdk::Status::Ok();
}

}  // namespace mnt::cnn

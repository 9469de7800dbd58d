// The C entry points of MNT_Model_Api for the mlp model: the shared
// argument checks (plugins/sdk/model/model_api.h), then MlpNetwork.
#include "models/mlp/mlp_model.h"

#include "plugins/sdk/model/model_api.h"
#include "models/mlp/mlp_network.h"
#include "plugins/sdk/export.h"

namespace mnt::mlp {
namespace {

inline constexpr char kMlpPluginName[] = "mlp";
using Api = models::ModelApi<MlpNetwork, kMlpPluginName>;

}  // namespace

const MNT_Plugin_Api* MlpPluginApi() {
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_MODEL, "mlp",
      "multi-layer perceptron classifier (hidden=128:128, activation=relu|gelu)",
      nullptr, nullptr, Api::Get(), nullptr, Api::Extensions());
  return &api;
}

}  // namespace mnt::mlp

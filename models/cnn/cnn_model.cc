// The C entry points of MNT_Model_Api for the cnn model: the shared
// argument checks (plugins/sdk/model/model_api.h), then CnnNetwork.
#include "models/cnn/cnn_model.h"

#include "plugins/sdk/model/model_api.h"
#include "models/cnn/cnn_network.h"
#include "plugins/sdk/export.h"

namespace mnt::cnn {
namespace {

inline constexpr char kCnnPluginName[] = "cnn";
using Api = models::ModelApi<CnnNetwork, kCnnPluginName>;

}  // namespace

const MNT_Plugin_Api* CnnPluginApi() {
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_MODEL, "cnn",
      "small ResNet image classifier (depth=2, width=16, bn_momentum=0.1)",
      nullptr, nullptr, Api::Get(), nullptr, Api::Extensions());
  return &api;
}

}  // namespace mnt::cnn

// The C entry points of MNT_Model_Api for the gpt2 model: the shared
// argument checks (plugins/sdk/model/model_api.h), then Gpt2Network.
#include "models/gpt2/gpt2_model.h"

#include "plugins/sdk/model/model_api.h"
#include "models/gpt2/gpt2_network.h"
#include "plugins/sdk/export.h"

namespace mnt::gpt2 {
namespace {

inline constexpr char kGpt2PluginName[] = "gpt2";
using Api = models::ModelApi<Gpt2Network, kGpt2PluginName>;

}  // namespace

const MNT_Plugin_Api* Gpt2PluginApi() {
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_MODEL, "gpt2",
      "GPT-2 language model (preset=gpt2-tiny|gpt2-124m, n_layer, n_head, "
      "d_model, seq_len, vocab, checkpointing=0|1)",
      nullptr, nullptr, Api::Get(), nullptr, Api::Extensions());
  return &api;
}

Gpt2Network* NetworkOf(MNT_Model* model) { return Api::NetworkOf(model); }

}  // namespace mnt::gpt2

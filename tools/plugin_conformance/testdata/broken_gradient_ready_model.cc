// mnt_model_broken_gradient_ready.so (tests only): the in-tree MLP model
// with its ABI 1.11 gradient hand-over (MNT_Model_Backward_Args.
// gradient_ready) broken as $MNT_BREAK_GRADIENT_READY says, so a test can
// show that the conformance suite's check catches each way a model can get
// it wrong (conformance_catches_broken_gradient_ready_test):
//   early   reports gradient 0 whole before Backward writes it (and drops
//           the model's own report of it)
//   twice   reports the model's first slice a second time
//   gap     drops the model's last report
// Unset or empty: a faithful copy of the MLP (same gradients either way).
#include <cstdlib>
#include <string>

#include "models/mlp/mlp_model.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/tensor.h"

namespace {

std::string Break() {
  const char* how = std::getenv("MNT_BREAK_GRADIENT_READY");
  return how != nullptr ? how : "";
}

const MNT_Model_Api* Mlp() { return mnt::mlp::MlpPluginApi()->model; }

// Stands between the model and the host's callback for one Backward.
struct Relay {
  std::string how;
  MNT_GradientReadyFn* host = nullptr;
  void* host_data = nullptr;
  int64_t calls = 0;
  bool held = false;  // gap: the last report seen, not yet passed on
  int64_t held_param = 0, held_first = 0, held_count = 0;

  static void Forward(void* user_data, int64_t param, int64_t first, int64_t count) {
    auto* r = static_cast<Relay*>(user_data);
    const bool first_call = r->calls++ == 0;
    if (r->how == "early" && param == 0) return;  // already reported
    if (r->how == "gap") {
      // Pass on the previous report: the last one is never passed on.
      if (r->held) r->host(r->host_data, r->held_param, r->held_first, r->held_count);
      r->held = true;
      r->held_param = param;
      r->held_first = first;
      r->held_count = count;
      return;
    }
    r->host(r->host_data, param, first, count);
    if (r->how == "twice" && first_call) r->host(r->host_data, param, first, count);
  }
};

MNT_Error* BrokenBackward(MNT_Model_Backward_Args* args) {
  static const std::string how = Break();
  if (how.empty() || args == nullptr ||
      !MNT_HAS_FIELD(args, MNT_Model_Backward_Args, gradient_ready_user_data) ||
      args->gradient_ready == nullptr) {
    return Mlp()->Model_Backward(args);
  }
  Relay relay;
  relay.how = how;
  relay.host = args->gradient_ready;
  relay.host_data = args->gradient_ready_user_data;
  MNT_Model_Backward_Args a = *args;
  a.gradient_ready = &Relay::Forward;
  a.gradient_ready_user_data = &relay;
  if (how == "early" && args->grads != nullptr && args->num_grads > 0) {
    relay.host(relay.host_data, 0, 0, mnt::sdk::NumElements(args->grads[0]));
  }
  return Mlp()->Model_Backward(&a);
}

const MNT_Plugin_Api* BrokenGradientReadyPluginApi() {
  static const MNT_Model_Api model = [] {
    MNT_Model_Api m = *Mlp();
    m.Model_Backward = &BrokenBackward;
    return m;
  }();
  static const MNT_Plugin_Api api = [] {
    MNT_Plugin_Api a = *mnt::mlp::MlpPluginApi();
    a.name = "broken_gradient_ready";
    a.description =
        "mlp with its gradient hand-over broken as $MNT_BREAK_GRADIENT_READY says (tests only)";
    a.model = &model;
    return a;
  }();
  return &api;
}

}  // namespace

MNT_EXPORT_PLUGIN(BrokenGradientReadyPluginApi)

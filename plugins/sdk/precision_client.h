// Mantissa plugin SDK: the stateless questions a host asks a precision
// plugin (which dtype each tensor role is stored in, how each op class
// computes, what a parameter costs), without building Args by hand.
#ifndef MANTISSA_PLUGINS_SDK_PRECISION_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_PRECISION_CLIENT_H_

#include <cstdint>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// A view of a loaded precision plugin; owns nothing. The answers are the
// ABI's own out-structs, filled in by the plugin.
class PrecisionClient {
 public:
  PrecisionClient() = default;
  explicit PrecisionClient(const MNT_Plugin_Api* plugin)
      : plugin_(plugin), api_(plugin->precision) {}

  const MNT_Plugin_Api* plugin() const { return plugin_; }

  // Dtypes of every tensor role, the GEMM operand format and the default
  // loss scaling.
  Status GetPolicy(MNT_Precision_GetPolicy_Args* policy) const {
    *policy = {};
    policy->struct_size = MNT_Precision_GetPolicy_Args_STRUCT_SIZE;
    return StatusFromPluginError(plugin_, api_->Precision_GetPolicy(policy));
  }

  // Storage, compute and accumulation formats of one op class.
  Status GetOpClassPolicy(MNT_OpClass op_class,
                          MNT_Precision_GetOpClassPolicy_Args* policy) const {
    *policy = {};
    policy->struct_size = MNT_Precision_GetOpClassPolicy_Args_STRUCT_SIZE;
    policy->op_class = op_class;
    return StatusFromPluginError(plugin_,
                                 api_->Precision_GetOpClassPolicy(policy));
  }

  // Bytes per parameter for an optimizer keeping `optimizer_state_slots`
  // fp32-sized tensors per parameter (SGD 1, AdamW 2).
  Status GetMemoryPlan(int32_t optimizer_state_slots,
                       MNT_Precision_GetMemoryPlan_Args* plan) const {
    *plan = {};
    plan->struct_size = MNT_Precision_GetMemoryPlan_Args_STRUCT_SIZE;
    plan->optimizer_state_slots = optimizer_state_slots;
    return StatusFromPluginError(plugin_, api_->Precision_GetMemoryPlan(plan));
  }

 private:
  const MNT_Plugin_Api* plugin_ = nullptr;
  const MNT_Precision_Api* api_ = nullptr;
};

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_PRECISION_CLIENT_H_

// The capabilities (ABI 1.9, MNT_Capability) every backend built on the
// common plugin offers: the common operand checks (calls/) accept these
// operands and params and every backend's kernels implement them. The
// common plugin advertises them (backend_plugin.h); a test backend that
// forwards to one of these backends advertises the same list.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_BACKEND_CAPABILITIES_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_BACKEND_CAPABILITIES_H_

#include <cstdint>

#include "plugins/abi/mantissa.h"

namespace mnt::backend {

inline constexpr int32_t kBackendCapabilities[] = {
    MNT_CAPABILITY_ADAMW_STEP_COUNTER,           // ADAMW_STEP in[3]
    MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE,      // hysteresis, min/max scale, out[3]
    MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER,  // CROSS_ENTROPY in[2]
    MNT_CAPABILITY_OPTIMIZER_DEVICE_LR,          // the optimizer ops' device lr
    MNT_CAPABILITY_STOCHASTIC_ROUNDING,          // MNT_ROUNDING_STOCHASTIC
    MNT_CAPABILITY_OPTIMIZER_PIECES,             // (1.11) rounding_element(s)/_tensors
};

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_BACKEND_CAPABILITIES_H_

// The contracts of SGD_STEP and ADAMW_STEP (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. found_inf, the
// gradient multiplier and AdamW's step counter live in device memory: the
// kernels read them (the CPU on the host, CUDA on the device, so an fp16 step
// needs no host round trip).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_OPTIMIZERS_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_OPTIMIZERS_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// The inputs both optimizers share: in[0] grad (n elements, any float dtype),
// in[1] optional found_inf F32[1] (non-zero: skip the whole step), in[2]
// optional gradient multiplier F32[1].
struct StepInputs {
  Operand grad, found_inf, multiplier;
  int64_t n = 0;
};

// master (F32, updated in place), momentum (F32; present only when
// coefficients.momentum != 0), optional working copy = the new master rounded.
struct SgdStepCall : TypedCall, StepInputs {
  Operand master, momentum, working;
  SgdCoefficients coefficients{};
};
sdk::Status CheckSgdStep(const OpCall& call, SgdStepCall* out);

// master, m, v (F32, updated in place), optional working copy. With the ABI
// 1.4 step_counter (I32[1], applied steps so far) bias correction uses
// counter + 1 and the kernel advances the counter on applied steps; without
// it, params->step (>= 1).
struct AdamWStepCall : TypedCall, StepInputs {
  const MNT_AdamWParams* params = nullptr;
  Operand step_counter;  // may be absent
  Operand master, m, v, working;
};
sdk::Status CheckAdamWStep(const OpCall& call, AdamWStepCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_OPTIMIZERS_H_

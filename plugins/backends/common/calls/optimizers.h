// The contracts of SGD_STEP, ADAMW_STEP and (1.6) their multi-tensor forms
// MULTI_SGD_STEP, MULTI_ADAMW_STEP, of 1.12's ADAMW8BIT_STEP and
// ADAFACTOR_STEP and (1.14) their multi-tensor forms MULTI_ADAMW8BIT_STEP,
// MULTI_ADAFACTOR_STEP (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. found_inf, the
// gradient multiplier, AdamW's step counter and (1.7) the learning rate live
// in device memory: the
// kernels read them (the CPU on the host, CUDA on the device, so an fp16 step
// needs no host round trip).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_OPTIMIZERS_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_OPTIMIZERS_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// The inputs both optimizers share: in[0] grad (n elements, any float dtype),
// in[1] optional found_inf F32[1] (non-zero: skip the whole step), in[2]
// optional gradient multiplier F32[1]; since 1.7 an optional device learning
// rate F32[1] (SGD_STEP in[3], ADAMW_STEP in[4]) that replaces params->lr.
struct StepInputs {
  Operand grad, found_inf, multiplier, lr;
  int64_t n = 0;
};

// ABI 1.7: how the working copy is written. Off (round to nearest even)
// for a 1.6 caller's params. When stochastic, every working copy is BF16
// (checked) and table entry t's element i takes the bits
// StochasticRoundingBits(StochasticRoundingKey(seed, step, TensorOf(t)),
// ElementOf(t) + i) (common/stochastic_rounding.h), where step is AdamW's
// bias-correction step (resolved by the kernel: the step counter lives on
// the device) or SGD's rounding_step. A single-tensor op is entry 0.
// ABI 1.11 (pieces of a parameter): `element` is SGD_STEP's / ADAMW_STEP's
// rounding_element, `tensors` / `elements` a multi-tensor op's optional
// rounding_tensors / rounding_elements (the caller's arrays, borrowed for
// the call; every value checked >= 0, and no piece's last element index
// overflows). A 1.10 caller's struct leaves them 0 / NULL.
struct WorkingRounding {
  bool stochastic = false;
  uint64_t seed = 0;
  int64_t tensor = 0;   // the first table entry's index in a multi-tensor op
  int64_t step = 0;     // SGD only
  int64_t element = 0;  // 1.11: the single-tensor ops' rounding_element
  const int64_t* tensors = nullptr;   // 1.11: optional [num_tensors]
  const int64_t* elements = nullptr;  // 1.11: optional [num_tensors]

  // Table entry i's tensor index for the random bits.
  int64_t TensorOf(size_t i) const {
    return tensors != nullptr ? tensors[i] : tensor + static_cast<int64_t>(i);
  }
  // The element index of table entry i's element 0.
  int64_t ElementOf(size_t i) const { return elements != nullptr ? elements[i] : element; }
};

// master (F32, updated in place), momentum (F32; present only when
// coefficients.momentum != 0), optional working copy = the new master rounded.
struct SgdStepCall : TypedCall, StepInputs {
  Operand master, momentum, working;
  SgdCoefficients coefficients{};
  WorkingRounding rounding;
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
  WorkingRounding rounding;
};
sdk::Status CheckAdamWStep(const OpCall& call, AdamWStepCall* out);

// Since 1.6: one tensor of a MULTI_ADAMW_STEP / MULTI_SGD_STEP table, with
// its own lr (lr * lr_scales[i], an fp32 product) and weight decay resolved
// here, so a kernel reads only the table. state1/state2: AdamW's m and v,
// SGD's momentum (absent when momentum is 0) and nothing. With a device lr
// (1.7) `lr` holds params->lr's resolution, unused: the kernel forms
// TableLr(device lr, lr_scale) itself
// (step_math.h).
struct MultiStepTensor {
  Operand grad, step_counter, master, state1, state2, working;
  int64_t n = 0;
  float lr = 0.0f;
  float lr_scale = 1.0f;  // lr_scales[i], 1 without the array
  float weight_decay = 0.0f;
};


// found_inf and the multiplier as StepInputs (grad unused, n 0); one entry
// per tensor. With step counters (every tensor has one) bias correction uses
// each counter + 1, else params->step.
struct MultiAdamWStepCall : TypedCall {
  const MNT_MultiAdamWParams* params = nullptr;
  Operand found_inf, multiplier;
  Operand lr;  // since 1.7: in[2+2n], the device learning rate (may be absent)
  std::vector<MultiStepTensor> tensors;
  bool step_counters = false;
  WorkingRounding rounding;
};
sdk::Status CheckMultiAdamWStep(const OpCall& call, MultiAdamWStepCall* out);

struct MultiSgdStepCall : TypedCall {
  const MNT_MultiSgdParams* params = nullptr;
  Operand found_inf, multiplier;
  Operand lr;  // since 1.7: in[2+n], the device learning rate (may be absent)
  std::vector<MultiStepTensor> tensors;
  // Tensor i's coefficients: these with tensors[i].lr and .weight_decay.
  float momentum = 0.0f;
  bool nesterov = false;
  WorkingRounding rounding;
};
sdk::Status CheckMultiSgdStep(const OpCall& call, MultiSgdStepCall* out);

// Since 1.12: ADAMW8BIT_STEP. Inputs, the step counter and the rounding as
// ADAMW_STEP's (its MNT_AdamWParams); outputs the master, each moment's
// codes (U8 [n]) and block absmax (F32 [QuantizationBlocks(n)]), optional
// working copy.
struct AdamW8bitStepCall : TypedCall, StepInputs {
  const MNT_AdamWParams* params = nullptr;
  Operand step_counter;  // may be absent
  Operand master, m_codes, m_absmax, v_codes, v_absmax, working;
  WorkingRounding rounding;
};
sdk::Status CheckAdamW8bitStep(const OpCall& call, AdamW8bitStepCall* out);

// Since 1.14: one tensor of a MULTI_ADAMW8BIT_STEP table: a MultiStepTensor
// whose state1 / state2 are the m / v codes (U8), with each moment's block
// absmax.
struct MultiAdamW8bitTensor : MultiStepTensor {
  Operand m_absmax, v_absmax;
};

// Since 1.14: MULTI_ADAMW8BIT_STEP, ADAMW8BIT_STEP over a table as
// MULTI_ADAMW_STEP is ADAMW_STEP over one (its MNT_MultiAdamWParams, its
// found_inf, multiplier, per-tensor step counters and device lr).
struct MultiAdamW8bitStepCall : TypedCall {
  const MNT_MultiAdamWParams* params = nullptr;
  Operand found_inf, multiplier;
  Operand lr;  // in[2+2n], the device learning rate (may be absent)
  std::vector<MultiAdamW8bitTensor> tensors;
  bool step_counters = false;
  WorkingRounding rounding;
};
sdk::Status CheckMultiAdamW8bitStep(const OpCall& call, MultiAdamW8bitStepCall* out);

// Since 1.12: ADAFACTOR_STEP on one whole parameter: its shape (factored for
// rank >= 2) from in[0]'s dims; the second moment is the row state
// (factored) or the full one, `col` present only when factored, `m` only
// when params->beta1 != 0.
struct AdafactorStepCall : TypedCall, StepInputs {
  const MNT_AdafactorParams* params = nullptr;
  FactoredShape shape;
  Operand step_counter;  // may be absent
  Operand master, second_moment, col, m, working;
  WorkingRounding rounding;
};
sdk::Status CheckAdafactorStep(const OpCall& call, AdafactorStepCall* out);

// Since 1.14: one whole parameter of a MULTI_ADAFACTOR_STEP table: a
// MultiStepTensor (grad, counter, lr and weight decay resolved) whose
// state1 is the second moment (row state or full), with the column state
// (factored only), the first moment (beta1 != 0 only) and its shape.
struct MultiAdafactorTensor : MultiStepTensor {
  Operand col, m;
  FactoredShape shape;
};

// Since 1.14: MULTI_ADAFACTOR_STEP, ADAFACTOR_STEP over a table (found_inf,
// the multiplier, per-tensor step counters and the device lr as
// MULTI_ADAMW_STEP's).
struct MultiAdafactorStepCall : TypedCall {
  const MNT_MultiAdafactorParams* params = nullptr;
  Operand found_inf, multiplier;
  Operand lr;  // in[2+2n], the device learning rate (may be absent)
  std::vector<MultiAdafactorTensor> tensors;
  bool step_counters = false;
  WorkingRounding rounding;
};
sdk::Status CheckMultiAdafactorStep(const OpCall& call, MultiAdafactorStepCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_OPTIMIZERS_H_

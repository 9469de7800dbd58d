#include "plugins/backends/common/calls/optimizers.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

Status CheckStepInputs(const OpCall& call, StepInputs* s) {
  MNT_RETURN_IF_ERROR(call.Input(0, "grad", &s->grad));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(s->grad));
  s->n = sdk::NumElements(*s->grad);
  s->found_inf = call.OptionalInput(1, "found_inf");
  if (s->found_inf.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(s->found_inf));
  s->multiplier = call.OptionalInput(2, "grad_multiplier");
  if (s->multiplier.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(s->multiplier));
  return Status::Ok();
}

// Since 1.7: the optional device learning rate at in[index].
Status CheckDeviceLr(const OpCall& call, size_t index, Operand* lr) {
  *lr = call.OptionalInput(index, "lr");
  if (lr->present()) return call.ExpectF32Scalar(*lr);
  return Status::Ok();
}

// An fp32 state tensor with as many elements as the gradient.
Status CheckState(const OpCall& call, const Operand& t, int64_t n) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  return call.ExpectElements(
      t, n, [&] { return sdk::Format("f32 with %lld elements like in[0] grad", (long long)n); });
}

Status CheckWorkingCopy(const OpCall& call, const Operand& t, int64_t n) {
  if (!t.present()) return Status::Ok();
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectElements(
      t, n, [&] { return sdk::Format("%lld elements like in[0] grad", (long long)n); });
}

// ABI 1.7's rounding fields of any of the four params structs (P), read
// only when the caller's struct_size holds them.
template <typename P>
Status CheckRounding(const OpCall& call, const P* p, WorkingRounding* r) {
  if (!MNT_HAS_FIELD(p, P, rounding_tensor)) return Status::Ok();
  const std::optional<MNT_Rounding> mode = sdk::ReadEnum(p->rounding);
  if (!mode.has_value()) {
    return call.Invalid(sdk::Format("rounding %d is not an MNT_Rounding",
                                    sdk::RawEnum(p->rounding)));
  }
  r->stochastic = *mode == MNT_ROUNDING_STOCHASTIC;
  r->seed = p->rounding_seed;
  r->tensor = p->rounding_tensor;
  return Status::Ok();
}

// ABI 1.11: a piece's first element index `element` (named `what`) of an
// operand with n elements: >= 0, and its last element's index fits int64.
Status CheckPieceElement(const OpCall& call, const std::string& what, int64_t element,
                         int64_t n) {
  if (element < 0) {
    return call.Invalid(sdk::Format("%s %lld must be >= 0", what.c_str(), (long long)element));
  }
  if (n > 0 && element > std::numeric_limits<int64_t>::max() - (n - 1)) {
    return call.Invalid(sdk::Format("%s %lld + %lld elements overflows the element index",
                                    what.c_str(), (long long)element, (long long)n));
  }
  return Status::Ok();
}

// ABI 1.11's rounding_element of SGD_STEP's / ADAMW_STEP's params (P), read
// only when the caller's struct_size holds it.
template <typename P>
Status CheckRoundingElement(const OpCall& call, const P* p, int64_t n, WorkingRounding* r) {
  if (!MNT_HAS_FIELD(p, P, rounding_element)) return Status::Ok();
  MNT_RETURN_IF_ERROR(CheckPieceElement(call, "rounding_element", p->rounding_element, n));
  r->element = p->rounding_element;
  return Status::Ok();
}

// ABI 1.11's rounding_tensors / rounding_elements of a multi-tensor op's
// params (P), each read only when the caller's struct_size holds it; after
// the table is checked (each entry's n).
// The optional rounding_tensors of a table of `count` entries: each >= 0.
Status CheckRoundingTensors(const OpCall& call, const int64_t* tensors, size_t count,
                            WorkingRounding* r) {
  if (tensors == nullptr) return Status::Ok();
  for (size_t i = 0; i < count; ++i) {
    if (tensors[i] < 0) {
      return call.Invalid(
          sdk::Format("rounding_tensors[%zu] %lld must be >= 0", i, (long long)tensors[i]));
    }
  }
  r->tensors = tensors;
  return Status::Ok();
}

template <typename P, typename Entry>
Status CheckRoundingPieces(const OpCall& call, const P* p, const std::vector<Entry>& tensors,
                           WorkingRounding* r) {
  if (MNT_HAS_FIELD(p, P, rounding_tensors)) {
    MNT_RETURN_IF_ERROR(CheckRoundingTensors(call, p->rounding_tensors, tensors.size(), r));
  }
  if (MNT_HAS_FIELD(p, P, rounding_elements) && p->rounding_elements != nullptr) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      MNT_RETURN_IF_ERROR(CheckPieceElement(call, sdk::Format("rounding_elements[%zu]", i),
                                            p->rounding_elements[i], tensors[i].n));
    }
    r->elements = p->rounding_elements;
  }
  return Status::Ok();
}

// Stochastic rounding writes bf16 bits: any other working copy is refused.
Status CheckRoundedCopy(const OpCall& call, const WorkingRounding& r, const Operand& t) {
  if (!r.stochastic || !t.present() || t->dtype == MNT_DTYPE_BF16) return Status::Ok();
  return call.Invalid(t.label + " is " + sdk::DTypeName(t->dtype) +
                      ", but stochastic rounding writes a bf16 working copy");
}

// found_inf in[0] and the multiplier in[1] of a multi-tensor step.
Status CheckMultiScalars(const OpCall& call, Operand* found_inf, Operand* multiplier) {
  *found_inf = call.OptionalInput(0, "found_inf");
  if (found_inf->present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(*found_inf));
  *multiplier = call.OptionalInput(1, "grad_multiplier");
  if (multiplier->present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(*multiplier));
  return Status::Ok();
}

// num_tensors >= 1 and the exact operand counts it implies (one more input
// allowed: the 1.7 device learning rate).
Status CheckTable(const OpCall& call, int64_t num_tensors, size_t inputs_per_tensor,
                  size_t outputs_per_tensor) {
  if (num_tensors < 1 || num_tensors > (int64_t{1} << 24)) {
    return call.Invalid(sdk::Format("num_tensors %lld must be 1..%lld",
                                    (long long)num_tensors, (long long)(int64_t{1} << 24)));
  }
  const size_t n = static_cast<size_t>(num_tensors);
  return call.CheckCounts(2 + inputs_per_tensor * n, 3 + inputs_per_tensor * n,
                          outputs_per_tensor * n, outputs_per_tensor * n);
}

// The grad of table entry t (in[index]) and its resolved lr and weight decay.
Status CheckTableEntry(const OpCall& call, size_t index, size_t i, float lr,
                       const float* lr_scales, float weight_decay,
                       const float* weight_decays, MultiStepTensor* t) {
  MNT_RETURN_IF_ERROR(call.Input(index, "grad", &t->grad));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t->grad));
  t->n = sdk::NumElements(*t->grad);
  t->lr_scale = lr_scales != nullptr ? lr_scales[i] : 1.0f;
  t->lr = TableLr(lr, t->lr_scale);
  t->weight_decay = weight_decays != nullptr ? weight_decays[i] : weight_decay;
  return Status::Ok();
}

// Table entry i's optional step counter at in[index]: given for every
// entry or for none (entry 0 decides `*given`).
Status CheckTableCounter(const OpCall& call, size_t index, size_t i, Operand* counter,
                         bool* given) {
  *counter = call.OptionalInput(index, "step_counter");
  if (i == 0) *given = counter->present();
  if (counter->present() != *given) {
    return call.Invalid(counter->label + (*given ? " is missing" : " is given") +
                        ", but step counters are given for every tensor or for none");
  }
  if (counter->present()) return call.ExpectI32Scalar(*counter);
  return Status::Ok();
}

}  // namespace

Status CheckSgdStep(const OpCall& call, SgdStepCall* s) {
  s->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 4, 1, 3));
  const MNT_SgdParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_SgdParams", MNT_SgdParams_STRUCT_SIZE_1_6, false, &p));
  MNT_RETURN_IF_ERROR(CheckRounding(call, p, &s->rounding));
  if (MNT_HAS_FIELD(p, MNT_SgdParams, rounding_step)) s->rounding.step = p->rounding_step;
  MNT_RETURN_IF_ERROR(CheckStepInputs(call, s));
  MNT_RETURN_IF_ERROR(CheckRoundingElement(call, p, s->n, &s->rounding));
  MNT_RETURN_IF_ERROR(CheckDeviceLr(call, 3, &s->lr));
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &s->master));
  MNT_RETURN_IF_ERROR(CheckState(call, s->master, s->n));
  if (p->momentum != 0.0f) {
    s->momentum = call.OptionalOutput(1, "momentum");
    if (!s->momentum.present()) {
      return call.Invalid(s->momentum.label + " is missing but momentum is " +
                          sdk::Format("%g", p->momentum));
    }
    MNT_RETURN_IF_ERROR(CheckState(call, s->momentum, s->n));
  }
  s->working = call.OptionalOutput(2, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, s->working, s->n));
  MNT_RETURN_IF_ERROR(CheckRoundedCopy(call, s->rounding, s->working));
  s->coefficients = SgdCoefficients{p->lr, p->momentum, p->weight_decay, p->nesterov != 0};
  return Status::Ok();
}

Status CheckAdamWStep(const OpCall& call, AdamWStepCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 5, 3, 4));
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AdamWParams", MNT_AdamWParams_STRUCT_SIZE_1_6, false, &a->params));
  MNT_RETURN_IF_ERROR(CheckRounding(call, a->params, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckStepInputs(call, a));
  MNT_RETURN_IF_ERROR(CheckRoundingElement(call, a->params, a->n, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckDeviceLr(call, 4, &a->lr));
  a->step_counter = call.OptionalInput(3, "step_counter");
  if (a->step_counter.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectI32Scalar(a->step_counter));
  } else if (a->params->step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)",
                                    (long long)a->params->step));
  }
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &a->master));
  MNT_RETURN_IF_ERROR(call.Output(1, "m", &a->m));
  MNT_RETURN_IF_ERROR(call.Output(2, "v", &a->v));
  for (const Operand* t : {&a->master, &a->m, &a->v}) {
    MNT_RETURN_IF_ERROR(CheckState(call, *t, a->n));
  }
  a->working = call.OptionalOutput(3, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, a->working, a->n));
  return CheckRoundedCopy(call, a->rounding, a->working);
}

Status CheckMultiAdamWStep(const OpCall& call, MultiAdamWStepCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.Params("MNT_MultiAdamWParams",
                                  MNT_MultiAdamWParams_STRUCT_SIZE_1_6, false, &a->params));
  const MNT_MultiAdamWParams* p = a->params;
  MNT_RETURN_IF_ERROR(CheckRounding(call, p, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckTable(call, p->num_tensors, 2, 4));
  MNT_RETURN_IF_ERROR(CheckMultiScalars(call, &a->found_inf, &a->multiplier));
  MNT_RETURN_IF_ERROR(
      CheckDeviceLr(call, 2 + 2 * static_cast<size_t>(p->num_tensors), &a->lr));
  a->tensors.resize(static_cast<size_t>(p->num_tensors));
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    MultiStepTensor& t = a->tensors[i];
    MNT_RETURN_IF_ERROR(CheckTableEntry(call, 2 + 2 * i, i, p->lr, p->lr_scales,
                                        p->weight_decay, p->weight_decays, &t));
    MNT_RETURN_IF_ERROR(CheckTableCounter(call, 3 + 2 * i, i, &t.step_counter,
                                          &a->step_counters));
    MNT_RETURN_IF_ERROR(call.Output(4 * i, "master", &t.master));
    MNT_RETURN_IF_ERROR(call.Output(4 * i + 1, "m", &t.state1));
    MNT_RETURN_IF_ERROR(call.Output(4 * i + 2, "v", &t.state2));
    for (const Operand* o : {&t.master, &t.state1, &t.state2}) {
      MNT_RETURN_IF_ERROR(CheckState(call, *o, t.n));
    }
    t.working = call.OptionalOutput(4 * i + 3, "working_copy");
    MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, t.working, t.n));
    MNT_RETURN_IF_ERROR(CheckRoundedCopy(call, a->rounding, t.working));
  }
  if (!a->step_counters && p->step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)", (long long)p->step));
  }
  return CheckRoundingPieces(call, p, a->tensors, &a->rounding);
}

Status CheckMultiSgdStep(const OpCall& call, MultiSgdStepCall* s) {
  s->op = &call;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_MultiSgdParams", MNT_MultiSgdParams_STRUCT_SIZE_1_6, false, &s->params));
  const MNT_MultiSgdParams* p = s->params;
  MNT_RETURN_IF_ERROR(CheckRounding(call, p, &s->rounding));
  if (MNT_HAS_FIELD(p, MNT_MultiSgdParams, rounding_step)) s->rounding.step = p->rounding_step;
  MNT_RETURN_IF_ERROR(CheckTable(call, p->num_tensors, 1, 3));
  MNT_RETURN_IF_ERROR(CheckMultiScalars(call, &s->found_inf, &s->multiplier));
  MNT_RETURN_IF_ERROR(CheckDeviceLr(call, 2 + static_cast<size_t>(p->num_tensors), &s->lr));
  s->momentum = p->momentum;
  s->nesterov = p->nesterov != 0;
  s->tensors.resize(static_cast<size_t>(p->num_tensors));
  for (size_t i = 0; i < s->tensors.size(); ++i) {
    MultiStepTensor& t = s->tensors[i];
    MNT_RETURN_IF_ERROR(CheckTableEntry(call, 2 + i, i, p->lr, p->lr_scales,
                                        p->weight_decay, p->weight_decays, &t));
    MNT_RETURN_IF_ERROR(call.Output(3 * i, "master", &t.master));
    MNT_RETURN_IF_ERROR(CheckState(call, t.master, t.n));
    if (p->momentum != 0.0f) {
      t.state1 = call.OptionalOutput(3 * i + 1, "momentum");
      if (!t.state1.present()) {
        return call.Invalid(t.state1.label + " is missing but momentum is " +
                            sdk::Format("%g", p->momentum));
      }
      MNT_RETURN_IF_ERROR(CheckState(call, t.state1, t.n));
    }
    t.working = call.OptionalOutput(3 * i + 2, "working_copy");
    MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, t.working, t.n));
    MNT_RETURN_IF_ERROR(CheckRoundedCopy(call, s->rounding, t.working));
  }
  return CheckRoundingPieces(call, p, s->tensors, &s->rounding);
}

namespace {

// The 1.12 ops' optional step counter at in[3]; without it params' step
// must be 1-based.
Status CheckStepCounter(const OpCall& call, int64_t step, Operand* counter) {
  *counter = call.OptionalInput(3, "step_counter");
  if (counter->present()) return call.ExpectI32Scalar(*counter);
  if (step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)", (long long)step));
  }
  return Status::Ok();
}

// One moment of ADAMW8BIT_STEP: codes U8 [n] at out[i], absmax F32 [blocks]
// at out[i + 1].
Status CheckQuantizedMoment(const OpCall& call, size_t i, const char* codes_name,
                            const char* absmax_name, int64_t n, Operand* codes,
                            Operand* absmax) {
  MNT_RETURN_IF_ERROR(call.Output(i, codes_name, codes));
  MNT_RETURN_IF_ERROR(call.ExpectDType(*codes, MNT_DTYPE_U8));
  MNT_RETURN_IF_ERROR(call.ExpectElements(
      *codes, n, [&] { return sdk::Format("u8 with %lld elements like in[0] grad", (long long)n); }));
  MNT_RETURN_IF_ERROR(call.Output(i + 1, absmax_name, absmax));
  MNT_RETURN_IF_ERROR(call.ExpectDType(*absmax, MNT_DTYPE_F32));
  const int64_t blocks = QuantizationBlocks(n);
  return call.ExpectElements(*absmax, blocks, [&] {
    return sdk::Format("f32 with %lld elements, one per %d-element block of in[0] grad",
                       (long long)blocks, kQuantizationBlock);
  });
}

// A finite float in [lo, hi) (hi_open) or [lo, hi].
bool InRange(float x, float lo, float hi, bool hi_open) {
  return std::isfinite(x) && x >= lo && (hi_open ? x < hi : x <= hi);
}

}  // namespace

Status CheckAdamW8bitStep(const OpCall& call, AdamW8bitStepCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 5, 5, 6));
  // The op was born with ABI 1.12: its caller's struct holds every field
  // MNT_AdamWParams had then.
  MNT_RETURN_IF_ERROR(call.Params("MNT_AdamWParams",
                                  MNT_STRUCT_SIZE(MNT_AdamWParams, rounding_element), false,
                                  &a->params));
  MNT_RETURN_IF_ERROR(CheckRounding(call, a->params, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckStepInputs(call, a));
  MNT_RETURN_IF_ERROR(CheckRoundingElement(call, a->params, a->n, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckDeviceLr(call, 4, &a->lr));
  MNT_RETURN_IF_ERROR(CheckStepCounter(call, a->params->step, &a->step_counter));
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &a->master));
  MNT_RETURN_IF_ERROR(CheckState(call, a->master, a->n));
  MNT_RETURN_IF_ERROR(
      CheckQuantizedMoment(call, 1, "m_codes", "m_absmax", a->n, &a->m_codes, &a->m_absmax));
  MNT_RETURN_IF_ERROR(
      CheckQuantizedMoment(call, 3, "v_codes", "v_absmax", a->n, &a->v_codes, &a->v_absmax));
  a->working = call.OptionalOutput(5, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, a->working, a->n));
  return CheckRoundedCopy(call, a->rounding, a->working);
}

Status CheckMultiAdamW8bitStep(const OpCall& call, MultiAdamW8bitStepCall* a) {
  a->op = &call;
  // Born with ABI 1.14: the caller's struct holds every field
  // MNT_MultiAdamWParams had then (its 1.11 size).
  MNT_RETURN_IF_ERROR(call.Params("MNT_MultiAdamWParams",
                                  MNT_STRUCT_SIZE(MNT_MultiAdamWParams, rounding_elements),
                                  false, &a->params));
  const MNT_MultiAdamWParams* p = a->params;
  MNT_RETURN_IF_ERROR(CheckRounding(call, p, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckTable(call, p->num_tensors, 2, 6));
  MNT_RETURN_IF_ERROR(CheckMultiScalars(call, &a->found_inf, &a->multiplier));
  MNT_RETURN_IF_ERROR(
      CheckDeviceLr(call, 2 + 2 * static_cast<size_t>(p->num_tensors), &a->lr));
  a->tensors.resize(static_cast<size_t>(p->num_tensors));
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    MultiAdamW8bitTensor& t = a->tensors[i];
    MNT_RETURN_IF_ERROR(CheckTableEntry(call, 2 + 2 * i, i, p->lr, p->lr_scales,
                                        p->weight_decay, p->weight_decays, &t));
    MNT_RETURN_IF_ERROR(CheckTableCounter(call, 3 + 2 * i, i, &t.step_counter,
                                          &a->step_counters));
    MNT_RETURN_IF_ERROR(call.Output(6 * i, "master", &t.master));
    MNT_RETURN_IF_ERROR(CheckState(call, t.master, t.n));
    MNT_RETURN_IF_ERROR(CheckQuantizedMoment(call, 6 * i + 1, "m_codes", "m_absmax", t.n,
                                             &t.state1, &t.m_absmax));
    MNT_RETURN_IF_ERROR(CheckQuantizedMoment(call, 6 * i + 3, "v_codes", "v_absmax", t.n,
                                             &t.state2, &t.v_absmax));
    t.working = call.OptionalOutput(6 * i + 5, "working_copy");
    MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, t.working, t.n));
    MNT_RETURN_IF_ERROR(CheckRoundedCopy(call, a->rounding, t.working));
  }
  if (!a->step_counters && p->step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)", (long long)p->step));
  }
  return CheckRoundingPieces(call, p, a->tensors, &a->rounding);
}

namespace {

// The ranges of the scalar params both Adafactor ops read (P:
// MNT_AdafactorParams or, 1.14, MNT_MultiAdafactorParams).
template <typename P>
Status CheckAdafactorScalars(const OpCall& call, const P* p) {
  if (!InRange(p->beta1, 0.0f, 1.0f, true)) {
    return call.Invalid(sdk::Format("beta1 %g must be in [0, 1) (0: no first moment)", p->beta1));
  }
  if (!InRange(p->decay_rate, -1e3f, 0.0f, true)) {
    return call.Invalid(sdk::Format("decay_rate %g must be negative (beta2_t = 1 - t^decay_rate)",
                                    p->decay_rate));
  }
  if (!InRange(p->epsilon1, 0.0f, 1.0f, false) || !InRange(p->epsilon2, 0.0f, 1.0f, false)) {
    return call.Invalid(sdk::Format("epsilon1 %g and epsilon2 %g must be in [0, 1]",
                                    p->epsilon1, p->epsilon2));
  }
  if (!(p->clip_threshold > 0.0f) || !std::isfinite(p->clip_threshold)) {
    return call.Invalid(sdk::Format("clip_threshold %g must be positive", p->clip_threshold));
  }
  for (const auto& [name, flag] : {std::pair<const char*, int32_t>{"relative_step", p->relative_step},
                                   {"scale_parameter", p->scale_parameter},
                                   {"warmup_init", p->warmup_init}}) {
    if (flag != 0 && flag != 1) return call.Invalid(sdk::Format("%s %d must be 0 or 1", name, flag));
  }
  return Status::Ok();
}

// One Adafactor tensor's outputs from out[base] (ADAFACTOR_STEP's out[0..4]):
// its shape from `grad` (named grad_name in messages), the master, the
// second moment (row state or full), the column state (factored only), the
// first moment (beta1 != 0 only), the working copy.
Status CheckAdafactorOutputs(const OpCall& call, size_t base, const Operand& grad,
                             const std::string& grad_name, int64_t n, float beta1,
                             const WorkingRounding& rounding, FactoredShape* shape,
                             Operand* master, Operand* second, Operand* col, Operand* m,
                             Operand* working) {
  *shape = FactoredShapeOf(grad->dims, grad->rank);
  MNT_RETURN_IF_ERROR(call.Output(base, "master", master));
  MNT_RETURN_IF_ERROR(CheckState(call, *master, n));
  MNT_RETURN_IF_ERROR(
      call.Output(base + 1, shape->factored ? "row_state" : "second_moment", second));
  MNT_RETURN_IF_ERROR(CheckState(call, *second, shape->factored ? shape->row_count() : n));
  *col = call.OptionalOutput(base + 2, "col_state");
  if (shape->factored) {
    if (!col->present()) {
      return call.Invalid(col->label + " is missing, but " + grad_name + " has rank " +
                          sdk::Format("%d (factored)", grad->rank));
    }
    MNT_RETURN_IF_ERROR(CheckState(call, *col, shape->col_states()));
  } else if (col->present()) {
    return call.Invalid(col->label + " is given, but " + grad_name + " has rank " +
                        sdk::Format("%d (not factored)", grad->rank));
  }
  *m = call.OptionalOutput(base + 3, "first_moment");
  if (beta1 != 0.0f) {
    if (!m->present()) {
      return call.Invalid(m->label + " is missing but beta1 is " + sdk::Format("%g", beta1));
    }
    MNT_RETURN_IF_ERROR(CheckState(call, *m, n));
  } else if (m->present()) {
    return call.Invalid(m->label + " is given but beta1 is 0 (no first moment)");
  }
  *working = call.OptionalOutput(base + 4, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, *working, n));
  return CheckRoundedCopy(call, rounding, *working);
}

}  // namespace

Status CheckAdafactorStep(const OpCall& call, AdafactorStepCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 5, 2, 5));
  MNT_RETURN_IF_ERROR(call.Params("MNT_AdafactorParams",
                                  MNT_STRUCT_SIZE(MNT_AdafactorParams, rounding_tensor), false,
                                  &a->params));
  const MNT_AdafactorParams* p = a->params;
  MNT_RETURN_IF_ERROR(CheckAdafactorScalars(call, p));
  MNT_RETURN_IF_ERROR(CheckRounding(call, p, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckStepInputs(call, a));
  MNT_RETURN_IF_ERROR(CheckDeviceLr(call, 4, &a->lr));
  MNT_RETURN_IF_ERROR(CheckStepCounter(call, p->step, &a->step_counter));
  return CheckAdafactorOutputs(call, 0, a->grad, "in[0] grad", a->n, p->beta1, a->rounding,
                               &a->shape, &a->master, &a->second_moment, &a->col, &a->m,
                               &a->working);
}

Status CheckMultiAdafactorStep(const OpCall& call, MultiAdafactorStepCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.Params("MNT_MultiAdafactorParams",
                                  MNT_STRUCT_SIZE(MNT_MultiAdafactorParams, rounding_tensors),
                                  false, &a->params));
  const MNT_MultiAdafactorParams* p = a->params;
  MNT_RETURN_IF_ERROR(CheckAdafactorScalars(call, p));
  MNT_RETURN_IF_ERROR(CheckRounding(call, p, &a->rounding));
  MNT_RETURN_IF_ERROR(CheckTable(call, p->num_tensors, 2, 5));
  MNT_RETURN_IF_ERROR(CheckMultiScalars(call, &a->found_inf, &a->multiplier));
  MNT_RETURN_IF_ERROR(
      CheckDeviceLr(call, 2 + 2 * static_cast<size_t>(p->num_tensors), &a->lr));
  a->tensors.resize(static_cast<size_t>(p->num_tensors));
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    MultiAdafactorTensor& t = a->tensors[i];
    MNT_RETURN_IF_ERROR(CheckTableEntry(call, 2 + 2 * i, i, p->lr, p->lr_scales,
                                        p->weight_decay, p->weight_decays, &t));
    MNT_RETURN_IF_ERROR(CheckTableCounter(call, 3 + 2 * i, i, &t.step_counter,
                                          &a->step_counters));
    MNT_RETURN_IF_ERROR(CheckAdafactorOutputs(
        call, 5 * i, t.grad, sdk::Format("in[%zu] grad", 2 + 2 * i), t.n, p->beta1,
        a->rounding, &t.shape, &t.master, &t.state1, &t.col, &t.m, &t.working));
  }
  if (!a->step_counters && p->step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)", (long long)p->step));
  }
  return CheckRoundingTensors(call, p->rounding_tensors, a->tensors.size(), &a->rounding);
}

}  // namespace mnt::backend

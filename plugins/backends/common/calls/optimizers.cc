#include "plugins/backends/common/calls/optimizers.h"

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

}  // namespace

Status CheckSgdStep(const OpCall& call, SgdStepCall* s) {
  s->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 3, 1, 3));
  const MNT_SgdParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_SgdParams", MNT_SgdParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(CheckStepInputs(call, s));
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
  s->coefficients = SgdCoefficients{p->lr, p->momentum, p->weight_decay, p->nesterov != 0};
  return Status::Ok();
}

Status CheckAdamWStep(const OpCall& call, AdamWStepCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 4, 3, 4));
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AdamWParams", MNT_AdamWParams_STRUCT_SIZE, false, &a->params));
  MNT_RETURN_IF_ERROR(CheckStepInputs(call, a));
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
  return CheckWorkingCopy(call, a->working, a->n);
}

}  // namespace mnt::backend

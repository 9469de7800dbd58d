// SGD (momentum, coupled weight decay, nesterov) and AdamW steps on fp32
// master weights, per element as torch.optim does (formulas in
// plugins/backends/common/elementwise_math.h).
#include <cmath>
#include <cstdint>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// The inputs both optimizers share: in[0] grad, in[1] optional found_inf,
// in[2] optional grad multiplier.
struct StepInputs {
  Operand grad;
  bool skip = false;       // found_inf is non-zero
  float multiplier = 1.0f;
};

Status ReadStepInputs(const OpCall& call, StepInputs* s) {
  MNT_RETURN_IF_ERROR(call.Input(0, "grad", &s->grad));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(s->grad));
  const Operand found_inf = call.OptionalInput(1, "found_inf");
  if (found_inf.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
    s->skip = *F32Data(*found_inf) != 0.0f;
  }
  const Operand multiplier = call.OptionalInput(2, "grad_multiplier");
  if (multiplier.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(multiplier));
    s->multiplier = *F32Data(*multiplier);
  }
  return Status::Ok();
}

// An fp32 state tensor with as many elements as the gradient.
Status CheckState(const OpCall& call, const Operand& t, int64_t n) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  return call.ExpectElements(t, n, sdk::Format("f32 with %lld elements like in[0] grad",
                                               (long long)n));
}

Status CheckWorkingCopy(const OpCall& call, const Operand& t, int64_t n) {
  if (!t.present()) return Status::Ok();
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectElements(
      t, n, sdk::Format("%lld elements like in[0] grad", (long long)n));
}

std::vector<float> ScaledGradient(const StepInputs& s) {
  std::vector<float> g = ReadF32(*s.grad);
  if (s.multiplier != 1.0f) {
    for (float& e : g) e *= s.multiplier;
  }
  return g;
}

}  // namespace

Status RunSgdStep(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 3, 1, 3));
  const MNT_SgdParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_SgdParams", MNT_SgdParams_STRUCT_SIZE, false, &p));
  StepInputs in;
  MNT_RETURN_IF_ERROR(ReadStepInputs(call, &in));
  const int64_t n = sdk::NumElements(*in.grad);
  Operand master;
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &master));
  MNT_RETURN_IF_ERROR(CheckState(call, master, n));
  const Operand momentum = call.OptionalOutput(1, "momentum");
  if (p->momentum != 0.0f) {
    if (!momentum.present()) {
      return call.Invalid(momentum.label + " is missing but momentum is " +
                          sdk::Format("%g", p->momentum));
    }
    MNT_RETURN_IF_ERROR(CheckState(call, momentum, n));
  }
  const Operand working = call.OptionalOutput(2, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, working, n));
  if (in.skip) return Status::Ok();  // overflow step: state stays bit-identical

  const std::vector<float> g = ScaledGradient(in);
  const SgdCoefficients c{p->lr, p->momentum, p->weight_decay, p->nesterov != 0};
  float* w = F32Data(*master);
  float* buf = p->momentum != 0.0f ? F32Data(*momentum) : nullptr;
  float unused = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    SgdUpdate(c, g[i], &w[i], buf ? &buf[i] : &unused);
  }
  if (working.present()) WriteF32(w, *working);
  return Status::Ok();
}

Status RunAdamWStep(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 4, 3, 4));
  const MNT_AdamWParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AdamWParams", MNT_AdamWParams_STRUCT_SIZE, false, &p));
  StepInputs in;
  MNT_RETURN_IF_ERROR(ReadStepInputs(call, &in));
  // ABI 1.4: the applied-step counter on the device replaces params->step.
  const Operand counter = call.OptionalInput(3, "step_counter");
  int64_t step = p->step;
  if (counter.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectDType(counter, MNT_DTYPE_I32));
    MNT_RETURN_IF_ERROR(call.ExpectElements(counter, 1, "i32 with 1 element"));
    const int32_t applied = *I32Data(*counter);
    if (applied < 0 || applied == INT32_MAX) {
      return call.Invalid(sdk::Format("%s holds %d, expected 0..%d applied steps",
                                      counter.label.c_str(), applied, INT32_MAX - 1));
    }
    step = int64_t{applied} + 1;
  } else if (p->step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)",
                                    (long long)p->step));
  }
  const int64_t n = sdk::NumElements(*in.grad);
  Operand master, m, v;
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &master));
  MNT_RETURN_IF_ERROR(call.Output(1, "m", &m));
  MNT_RETURN_IF_ERROR(call.Output(2, "v", &v));
  for (const Operand* t : {&master, &m, &v}) {
    MNT_RETURN_IF_ERROR(CheckState(call, *t, n));
  }
  const Operand working = call.OptionalOutput(3, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, working, n));
  if (in.skip) return Status::Ok();  // the counter stays as it is, too

  const std::vector<float> g = ScaledGradient(in);
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay, step);
  float* w = F32Data(*master);
  float* mv = F32Data(*m);
  float* vv = F32Data(*v);
  for (int64_t i = 0; i < n; ++i) AdamWUpdate(c, g[i], &w[i], &mv[i], &vv[i]);
  if (working.present()) WriteF32(w, *working);
  if (counter.present()) *static_cast<int32_t*>(counter->data) += 1;
  return Status::Ok();
}

}  // namespace mnt::cpu

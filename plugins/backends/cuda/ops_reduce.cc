// REDUCE, GLOBAL_NORM_SQUARED, NONFINITE_CHECK_UNSCALE, the optimizer steps
// and (ABI 1.4) AMP_UPDATE_SCALE and CLIP_COEFFICIENT. Nothing here reads
// device memory on the host: found_inf, the gradient multiplier, inv_scale,
// the loss scale and AdamW's step counter stay on the device, so an fp16 step
// with dynamic loss scaling needs no host round trip.
#include <cmath>
#include <vector>

#include "plugins/backends/cuda/ops.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {
float* F32(const Operand& o) { return static_cast<float*>(o->data); }
}  // namespace

Status RunReduce(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_ReduceParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_ReduceParams", MNT_ReduceParams_STRUCT_SIZE, false, &p));
  Operand x, out;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(out));
  ReduceOp op;
  switch (p->kind) {
    case MNT_REDUCE_SUM:
    case MNT_REDUCE_MEAN: op = ReduceOp::kSum; break;
    case MNT_REDUCE_MAX: op = ReduceOp::kMax; break;
    default:
      return call.Invalid(
          sdk::Format("unknown reduce kind %d", static_cast<int>(p->kind)));
  }
  const int64_t n = sdk::NumElements(*x);
  if (n == 0 && p->kind != MNT_REDUCE_SUM) {
    return call.Invalid(x.label + " is empty; only SUM reduces nothing");
  }
  const int64_t count = ReducePartialCount(n);
  Scratch partials(b);
  MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(double) * count));
  double* part = static_cast<double*>(partials.data());
  MNT_RETURN_IF_ERROR(
      Launched(call, LaunchReducePartials(b.stream, Dev(x), n, op, part), "reduce"));
  const double divisor = p->kind == MNT_REDUCE_MEAN ? static_cast<double>(n) : 1.0;
  return Launched(call, LaunchReduceFinish(b.stream, part, count, op, divisor, F32(out)),
                  "reduce_finish");
}

Status RunGlobalNormSquared(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, SIZE_MAX, 1, 1));
  Operand out;
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &out));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(out));
  std::vector<Operand> xs(call.num_inputs());
  int64_t total = 0;
  for (size_t i = 0; i < call.num_inputs(); ++i) {
    MNT_RETURN_IF_ERROR(call.Input(i, "x", &xs[i]));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(xs[i]));
    total += ReducePartialCount(sdk::NumElements(*xs[i]));
  }
  // Partials of all inputs side by side, combined once: one fixed order.
  Scratch partials(b);
  MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(double) * total));
  double* part = static_cast<double*>(partials.data());
  int64_t offset = 0;
  for (const Operand& x : xs) {
    const int64_t n = sdk::NumElements(*x);
    MNT_RETURN_IF_ERROR(Launched(
        call, LaunchReducePartials(b.stream, Dev(x), n, ReduceOp::kSumSquares, part + offset),
        "sum_squares"));
    offset += ReducePartialCount(n);
  }
  return Launched(call,
                  LaunchReduceFinish(b.stream, part, total, ReduceOp::kSum, 1.0, F32(out)),
                  "reduce_finish");
}

Status RunNonfiniteCheckUnscale(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, SIZE_MAX, 1, SIZE_MAX));
  if (call.num_outputs() != call.num_inputs()) {
    return call.Invalid(sdk::Format(
        "got %zu inputs and %zu outputs, expected as many outputs as inputs "
        "(found_inf + one per gradient)",
        call.num_inputs(), call.num_outputs()));
  }
  Operand inv_scale, found_inf;
  MNT_RETURN_IF_ERROR(call.Input(0, "inv_scale", &inv_scale));
  MNT_RETURN_IF_ERROR(call.Output(0, "found_inf", &found_inf));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(inv_scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
  std::vector<Operand> grads(call.num_inputs()), outs(call.num_inputs());
  for (size_t i = 1; i < call.num_inputs(); ++i) {
    MNT_RETURN_IF_ERROR(call.Input(i, "grad", &grads[i]));
    MNT_RETURN_IF_ERROR(call.Output(i, "unscaled", &outs[i]));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(grads[i]));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(outs[i]));
    const int64_t n = sdk::NumElements(*grads[i]);
    MNT_RETURN_IF_ERROR(call.ExpectElements(
        outs[i], n, sdk::Format("%lld elements like in[%zu]", (long long)n, i)));
  }
  for (size_t i = 1; i < call.num_inputs(); ++i) {
    MNT_RETURN_IF_ERROR(Launched(
        call,
        LaunchUnscale(b.stream, F32(inv_scale), Dev(grads[i]), Dev(outs[i]),
                      sdk::NumElements(*grads[i]), F32(found_inf)),
        "unscale"));
  }
  return Status::Ok();
}

namespace {

Status ReadStepInputs(const OpCall& call, StepBuffers* s, Operand* grad) {
  MNT_RETURN_IF_ERROR(call.Input(0, "grad", grad));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(*grad));
  s->grad = Dev(*grad);
  s->n = sdk::NumElements(**grad);
  const Operand found_inf = call.OptionalInput(1, "found_inf");
  if (found_inf.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
    s->found_inf = F32(found_inf);
  }
  const Operand multiplier = call.OptionalInput(2, "grad_multiplier");
  if (multiplier.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(multiplier));
    s->multiplier = F32(multiplier);
  }
  return Status::Ok();
}

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

}  // namespace

Status RunSgdStep(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 3, 1, 3));
  const MNT_SgdParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_SgdParams", MNT_SgdParams_STRUCT_SIZE, false, &p));
  StepBuffers s;
  Operand grad;
  MNT_RETURN_IF_ERROR(ReadStepInputs(call, &s, &grad));
  Operand master;
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &master));
  MNT_RETURN_IF_ERROR(CheckState(call, master, s.n));
  const Operand momentum = call.OptionalOutput(1, "momentum");
  if (p->momentum != 0.0f) {
    if (!momentum.present()) {
      return call.Invalid(momentum.label + " is missing but momentum is " +
                          sdk::Format("%g", p->momentum));
    }
    MNT_RETURN_IF_ERROR(CheckState(call, momentum, s.n));
    s.state1 = F32(momentum);
  }
  const Operand working = call.OptionalOutput(2, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, working, s.n));
  s.master = F32(master);
  s.working = Dev(working);
  const SgdCoefficients c{p->lr, p->momentum, p->weight_decay, p->nesterov != 0};
  return Launched(call, LaunchSgdStep(b.stream, s, c), "sgd_step");
}

Status RunAdamWStep(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 4, 3, 4));
  const MNT_AdamWParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AdamWParams", MNT_AdamWParams_STRUCT_SIZE, false, &p));
  StepBuffers s;
  Operand grad;
  MNT_RETURN_IF_ERROR(ReadStepInputs(call, &s, &grad));
  // ABI 1.4: the applied-step counter on the device replaces params->step
  // (its range is not checked here: that would need a host read).
  const Operand counter = call.OptionalInput(3, "step_counter");
  if (counter.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectDType(counter, MNT_DTYPE_I32));
    MNT_RETURN_IF_ERROR(call.ExpectElements(counter, 1, "i32 with 1 element"));
    s.step_counter = static_cast<int32_t*>(counter->data);
  } else if (p->step < 1) {
    return call.Invalid(sdk::Format("step %lld must be >= 1 (1-based)",
                                    (long long)p->step));
  }
  Operand master, m, v;
  MNT_RETURN_IF_ERROR(call.Output(0, "master", &master));
  MNT_RETURN_IF_ERROR(call.Output(1, "m", &m));
  MNT_RETURN_IF_ERROR(call.Output(2, "v", &v));
  for (const Operand* t : {&master, &m, &v}) {
    MNT_RETURN_IF_ERROR(CheckState(call, *t, s.n));
  }
  const Operand working = call.OptionalOutput(3, "working_copy");
  MNT_RETURN_IF_ERROR(CheckWorkingCopy(call, working, s.n));
  s.master = F32(master);
  s.state1 = F32(m);
  s.state2 = F32(v);
  s.working = Dev(working);
  // Bias corrections in double with the shared formula, the same bits as
  // the CPU backend and as the device-counter path.
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay,
      s.step_counter != nullptr ? 1 : p->step);
  return Launched(call, LaunchAdamWStep(b.stream, s, c), "adamw_step");
}

Status RunAmpUpdateScale(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 3, 3));
  const MNT_AmpUpdateScaleParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AmpUpdateScaleParams",
                                  MNT_AmpUpdateScaleParams_STRUCT_SIZE, false, &p));
  if (!(p->growth_factor > 1.0f) || !std::isfinite(p->growth_factor)) {
    return call.Invalid(sdk::Format("growth_factor %g must be finite and > 1",
                                    static_cast<double>(p->growth_factor)));
  }
  if (!(p->backoff_factor > 0.0f && p->backoff_factor < 1.0f)) {
    return call.Invalid(sdk::Format("backoff_factor %g must be in (0, 1)",
                                    static_cast<double>(p->backoff_factor)));
  }
  if (p->growth_interval < 1) {
    return call.Invalid(
        sdk::Format("growth_interval %d must be >= 1", p->growth_interval));
  }
  Operand found_inf, scale, tracker, inv_scale;
  MNT_RETURN_IF_ERROR(call.Input(0, "found_inf", &found_inf));
  MNT_RETURN_IF_ERROR(call.Output(0, "scale", &scale));
  MNT_RETURN_IF_ERROR(call.Output(1, "growth_tracker", &tracker));
  MNT_RETURN_IF_ERROR(call.Output(2, "inv_scale", &inv_scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(scale));
  MNT_RETURN_IF_ERROR(call.ExpectDType(tracker, MNT_DTYPE_I32));
  MNT_RETURN_IF_ERROR(call.ExpectElements(tracker, 1, "i32 with 1 element"));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(inv_scale));
  return Launched(call,
                  LaunchAmpUpdateScale(b.stream, F32(found_inf), F32(scale),
                                       static_cast<int32_t*>(tracker->data),
                                       F32(inv_scale), p->growth_factor,
                                       p->backoff_factor, p->growth_interval),
                  "amp_update_scale");
}

Status RunClipCoefficient(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 1, 1));
  const MNT_ClipCoefficientParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_ClipCoefficientParams",
                                  MNT_ClipCoefficientParams_STRUCT_SIZE, false, &p));
  if (std::isnan(p->max_norm)) return call.Invalid("max_norm is NaN");
  Operand norm_squared, multiplier;
  MNT_RETURN_IF_ERROR(call.Input(0, "norm_squared", &norm_squared));
  MNT_RETURN_IF_ERROR(call.Output(0, "multiplier", &multiplier));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(norm_squared));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(multiplier));
  const Operand found_inf = call.OptionalInput(1, "found_inf");
  if (found_inf.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(found_inf));
  return Launched(call,
                  LaunchClipCoefficient(b.stream, F32(norm_squared),
                                        found_inf.present() ? F32(found_inf) : nullptr,
                                        p->max_norm, F32(multiplier)),
                  "clip_coefficient");
}

}  // namespace mnt::cuda

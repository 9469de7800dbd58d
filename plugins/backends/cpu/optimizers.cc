// SGD (momentum, coupled weight decay, nesterov) and AdamW steps on fp32
// master weights, per element as torch.optim does (formulas in
// plugins/backends/common/elementwise_math.h and step_math.h); since ABI 1.6
// also over a table of tensors in one call (MULTI_SGD_STEP, MULTI_ADAMW_STEP),
// each tensor updated by the single-tensor code path, so the bits are the same.
// Since 1.7 the learning rate may come from a device scalar instead of the
// params (the CPU backend's device memory is host memory: read directly), and
// the bf16 working copy may be rounded stochastically
// (common/stochastic_rounding.h); since 1.11 with a tensor index and a first
// element index of the caller's choosing, so a piece of a parameter gets the
// bits the whole parameter would.
#include <cstdint>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/optimizer_steps.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/backends/cpu/vector_loops.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// update(off, g, multiplier, len) for every block [off, off + len) with its
// gradients g as fp32 (to be multiplied by `multiplier`, 1 when none is
// given), read from the gradient's own memory a block at a time; then the
// working copy (when present) of the block's new master
// weights, rounded to nearest or stochastically (a BF16 copy then: the
// contract check saw to it; element i's bits depend on i only, not on the
// thread or block). One region per tensor.
template <typename Update>
void StepBlocks(const backend::StepInputs& s, const float* w, const Operand& working,
                const CopyRounding& rounding, Update update) {
  const float multiplier = s.multiplier.present() ? *s.multiplier.f32() : 1.0f;
  const MNT_Tensor& grad = *s.grad;
  ForBlocks(s.n, [&](int64_t off, int64_t len) {
    float buf[kBlock];
    update(off, InBlock(grad, off, len, buf), multiplier, len);
    WriteWorkingBlock(w, working, rounding, off, len);
  });
}

// A multi-tensor step's found_inf and multiplier as the single-tensor
// kernels read them.
backend::StepInputs TableInputs(const Operand& found_inf, const Operand& multiplier,
                                const backend::MultiStepTensor& t) {
  backend::StepInputs s;
  s.grad = t.grad;
  s.found_inf = found_inf;
  s.multiplier = multiplier;
  s.n = t.n;
  return s;
}

void SgdTensor(const backend::StepInputs& s, const SgdCoefficients& c, float* w,
               float* buf, const Operand& working, const CopyRounding& rounding) {
  StepBlocks(s, w, working, rounding,
             [&](int64_t off, const float* g, float multiplier, int64_t len) {
               for (int64_t i = 0; i < len; ++i) {
                 float unused = 0.0f;
                 SgdUpdate(c, g[i] * multiplier, &w[off + i], buf ? &buf[off + i] : &unused);
               }
             });
}

void AdamWTensor(const backend::StepInputs& s, const AdamWCoefficients& c, float* w,
                 float* m, float* v, const Operand& working, const CopyRounding& rounding) {
  StepBlocks(s, w, working, rounding,
             [&](int64_t off, const float* g, float multiplier, int64_t len) {
               Loops().adamw(c, g, multiplier, w + off, m + off, v + off, len);
             });
}

}  // namespace

Status CpuBackend::SgdStep(const backend::SgdStepCall& s) {
  if (SkipStep(s)) return Status::Ok();  // overflow step: state stays bit-identical
  SgdCoefficients c = s.coefficients;
  c.lr = StepLr(s.lr, c.lr);
  SgdTensor(s, c, s.master.f32(), s.momentum.f32(), s.working,
            RoundingFor(s.rounding, 0, s.rounding.step));
  return Status::Ok();
}

Status CpuBackend::AdamWStep(const backend::AdamWStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  // ABI 1.4: the applied-step counter on the device replaces params->step.
  int64_t step = p->step;
  if (a.step_counter.present()) MNT_RETURN_IF_ERROR(NextStep(a, a.step_counter, &step));
  if (SkipStep(a)) return Status::Ok();  // the counter stays as it is, too
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      StepLr(a.lr, p->lr), p->beta1, p->beta2, p->epsilon, p->weight_decay, step);
  AdamWTensor(a, c, a.master.f32(), a.m.f32(), a.v.f32(), a.working,
              RoundingFor(a.rounding, 0, step));
  if (a.step_counter.present()) *a.step_counter.i32() += 1;
  return Status::Ok();
}

Status CpuBackend::MultiSgdStep(const backend::MultiSgdStepCall& s) {
  if (s.found_inf.present() && *s.found_inf.f32() != 0.0f) return Status::Ok();
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const backend::MultiStepTensor& t = s.tensors[i];
    const float lr = s.lr.present() ? TableLr(*s.lr.f32(), t.lr_scale) : t.lr;
    const SgdCoefficients c{lr, s.momentum, t.weight_decay, s.nesterov};
    SgdTensor(TableInputs(s.found_inf, s.multiplier, t), c, t.master.f32(),
              t.state1.f32(), t.working, RoundingFor(s.rounding, i, s.rounding.step));
  }
  return Status::Ok();
}

Status CpuBackend::MultiAdamWStep(const backend::MultiAdamWStepCall& a) {
  const MNT_MultiAdamWParams* p = a.params;
  // Every counter is checked before anything is written.
  std::vector<int64_t> steps(a.tensors.size(), p->step);
  for (size_t i = 0; i < a.tensors.size() && a.step_counters; ++i) {
    MNT_RETURN_IF_ERROR(NextStep(a, a.tensors[i].step_counter, &steps[i]));
  }
  if (a.found_inf.present() && *a.found_inf.f32() != 0.0f) return Status::Ok();
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const backend::MultiStepTensor& t = a.tensors[i];
    const float lr = a.lr.present() ? TableLr(*a.lr.f32(), t.lr_scale) : t.lr;
    const AdamWCoefficients c = AdamWCoefficientsForStep(
        lr, p->beta1, p->beta2, p->epsilon, t.weight_decay, steps[i]);
    AdamWTensor(TableInputs(a.found_inf, a.multiplier, t), c, t.master.f32(),
                t.state1.f32(), t.state2.f32(), t.working,
                RoundingFor(a.rounding, i, steps[i]));
    if (a.step_counters) *t.step_counter.i32() += 1;
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

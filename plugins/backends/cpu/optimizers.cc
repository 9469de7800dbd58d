// SGD (momentum, coupled weight decay, nesterov) and AdamW steps on fp32
// master weights, per element as torch.optim does (formulas in
// plugins/backends/common/elementwise_math.h and step_math.h).
#include <cstdint>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Below this many elements waking the threads costs more than it saves.
constexpr int64_t kParallelElements = int64_t{1} << 14;

// found_inf is non-zero: the whole step is skipped.
bool SkipStep(const backend::StepInputs& s) {
  return s.found_inf.present() && *s.found_inf.f32() != 0.0f;
}

// The gradient as fp32, times the multiplier when one is given.
std::vector<float> ScaledGradient(const backend::StepInputs& s) {
  std::vector<float> g = ReadF32(*s.grad);
  const float multiplier = s.multiplier.present() ? *s.multiplier.f32() : 1.0f;
  if (multiplier != 1.0f) {
    float* gv = g.data();
    const int64_t n = static_cast<int64_t>(g.size());
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) gv[i] *= multiplier;
  }
  return g;
}

}  // namespace

Status CpuBackend::SgdStep(const backend::SgdStepCall& s) {
  if (SkipStep(s)) return Status::Ok();  // overflow step: state stays bit-identical
  const std::vector<float> g = ScaledGradient(s);
  float* w = s.master.f32();
  float* buf = s.momentum.f32();  // nullptr without momentum
#pragma omp parallel for schedule(static) if (s.n > kParallelElements)
  for (int64_t i = 0; i < s.n; ++i) {
    float unused = 0.0f;
    SgdUpdate(s.coefficients, g[i], &w[i], buf ? &buf[i] : &unused);
  }
  if (s.working.present()) WriteF32(w, *s.working);
  return Status::Ok();
}

Status CpuBackend::AdamWStep(const backend::AdamWStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  // ABI 1.4: the applied-step counter on the device replaces params->step.
  int64_t step = p->step;
  if (a.step_counter.present()) {
    const int32_t applied = *a.step_counter.i32();
    if (applied < 0 || applied == INT32_MAX) {
      return a.Invalid(sdk::Format("%s holds %d, expected 0..%d applied steps",
                                   a.step_counter.label.c_str(), applied,
                                   INT32_MAX - 1));
    }
    step = int64_t{applied} + 1;
  }
  if (SkipStep(a)) return Status::Ok();  // the counter stays as it is, too
  const std::vector<float> g = ScaledGradient(a);
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay, step);
  float* w = a.master.f32();
  float* m = a.m.f32();
  float* v = a.v.f32();
#pragma omp parallel for schedule(static) if (a.n > kParallelElements)
  for (int64_t i = 0; i < a.n; ++i) AdamWUpdate(c, g[i], &w[i], &m[i], &v[i]);
  if (a.working.present()) WriteF32(w, *a.working);
  if (a.step_counter.present()) *a.step_counter.i32() += 1;
  return Status::Ok();
}

}  // namespace mnt::cpu

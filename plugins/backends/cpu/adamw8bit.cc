// ADAMW8BIT_STEP (ABI 1.12): AdamW with both moments kept as 8-bit codes
// and a per-block absmax (common/adamw8bit_math.h, bitsandbytes' blockwise
// scheme). Blocks of 256 elements are independent and each is stepped by
// one thread in element order, inside ForBlocks' chunks of 1024 (a whole
// number of blocks), so the bits are the same for any thread count. Since
// ABI 1.14 also over a table of tensors (MULTI_ADAMW8BIT_STEP), each
// tensor stepped by the single-tensor code.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "plugins/backends/common/adamw8bit_math.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/optimizer_steps.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

static_assert(kBlock % kQuantizationBlock == 0,
              "a ForBlocks chunk must hold whole quantization blocks");
static_assert(MNT_QUANTIZATION_BLOCK_SIZE == kQuantizationBlock,
              "the ABI's block size is the math's");

namespace {

// Both maps, built once from their exact definition.
const AdamW8bitMaps& Maps() {
  static const AdamW8bitMaps maps = [] {
    AdamW8bitMaps m;
    BuildAdamW8bitMaps(&m);
    return m;
  }();
  return maps;
}

// One tensor's step (or a piece's): `s` its gradient and multiplier, `c`
// its coefficients, the rest its state.
void AdamW8bitTensor(const backend::StepInputs& s, const AdamWCoefficients& c, float* w,
                     uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                     const Operand& working, const CopyRounding& rounding) {
  const AdamW8bitMaps& maps = Maps();
  const float multiplier = s.multiplier.present() ? *s.multiplier.f32() : 1.0f;
  const MNT_Tensor& grad = *s.grad;
  ForBlocks(s.n, [&](int64_t off, int64_t len) {
    float buf[kBlock], scaled[kBlock];
    const float* g = InBlock(grad, off, len, buf);
    if (multiplier != 1.0f) {
      for (int64_t i = 0; i < len; ++i) scaled[i] = g[i] * multiplier;
      g = scaled;
    }
    for (int64_t b = 0; b < len; b += kQuantizationBlock) {
      const int64_t at = off + b;
      const int count = static_cast<int>(std::min<int64_t>(kQuantizationBlock, len - b));
      const int64_t block = at / kQuantizationBlock;
      AdamW8bitBlock(c, maps, g + b, w + at, m_codes + at, m_absmax + block, v_codes + at,
                     v_absmax + block, count);
    }
    WriteWorkingBlock(w, working, rounding, off, len);
  });
}

uint8_t* Codes(const Operand& t) { return static_cast<uint8_t*>(t->data); }

}  // namespace

Status CpuBackend::AdamW8bitStep(const backend::AdamW8bitStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  int64_t step = p->step;
  if (a.step_counter.present()) MNT_RETURN_IF_ERROR(NextStep(a, a.step_counter, &step));
  if (SkipStep(a)) return Status::Ok();  // codes, absmax and counter stay as they are
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      StepLr(a.lr, p->lr), p->beta1, p->beta2, p->epsilon, p->weight_decay, step);
  AdamW8bitTensor(a, c, a.master.f32(), Codes(a.m_codes), a.m_absmax.f32(), Codes(a.v_codes),
                  a.v_absmax.f32(), a.working, RoundingFor(a.rounding, 0, step));
  if (a.step_counter.present()) *a.step_counter.i32() += 1;
  return Status::Ok();
}

// ABI 1.14: each table entry by the single-tensor code, so the bits are
// n ADAMW8BIT_STEP calls'.
Status CpuBackend::MultiAdamW8bitStep(const backend::MultiAdamW8bitStepCall& a) {
  const MNT_MultiAdamWParams* p = a.params;
  // Every counter is checked before anything is written.
  std::vector<int64_t> steps(a.tensors.size(), p->step);
  for (size_t i = 0; i < a.tensors.size() && a.step_counters; ++i) {
    MNT_RETURN_IF_ERROR(NextStep(a, a.tensors[i].step_counter, &steps[i]));
  }
  if (a.found_inf.present() && *a.found_inf.f32() != 0.0f) return Status::Ok();
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const backend::MultiAdamW8bitTensor& t = a.tensors[i];
    const float lr = a.lr.present() ? TableLr(*a.lr.f32(), t.lr_scale) : t.lr;
    const AdamWCoefficients c = AdamWCoefficientsForStep(lr, p->beta1, p->beta2, p->epsilon,
                                                         t.weight_decay, steps[i]);
    backend::StepInputs s;
    s.grad = t.grad;
    s.multiplier = a.multiplier;
    s.n = t.n;
    AdamW8bitTensor(s, c, t.master.f32(), Codes(t.state1), t.m_absmax.f32(), Codes(t.state2),
                    t.v_absmax.f32(), t.working, RoundingFor(a.rounding, i, steps[i]));
    if (a.step_counters) *t.step_counter.i32() += 1;
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

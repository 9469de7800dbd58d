// ADAMW8BIT_STEP (ABI 1.12): AdamW with both moments kept as 8-bit codes
// and a per-block absmax (common/adamw8bit_math.h, bitsandbytes' blockwise
// scheme). Blocks of 256 elements are independent and each is stepped by
// one thread in element order, inside ForBlocks' chunks of 1024 (a whole
// number of blocks), so the bits are the same for any thread count.
#include <algorithm>
#include <cstdint>

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

}  // namespace

Status CpuBackend::AdamW8bitStep(const backend::AdamW8bitStepCall& a) {
  const MNT_AdamWParams* p = a.params;
  int64_t step = p->step;
  if (a.step_counter.present()) MNT_RETURN_IF_ERROR(NextStep(a, a.step_counter, &step));
  if (SkipStep(a)) return Status::Ok();  // codes, absmax and counter stay as they are
  const AdamWCoefficients c = AdamWCoefficientsForStep(
      StepLr(a.lr, p->lr), p->beta1, p->beta2, p->epsilon, p->weight_decay, step);
  const CopyRounding rounding = RoundingFor(a.rounding, 0, step);
  const AdamW8bitMaps& maps = Maps();
  const float multiplier = a.multiplier.present() ? *a.multiplier.f32() : 1.0f;
  float* w = a.master.f32();
  uint8_t* m_codes = static_cast<uint8_t*>(a.m_codes->data);
  uint8_t* v_codes = static_cast<uint8_t*>(a.v_codes->data);
  float* m_absmax = a.m_absmax.f32();
  float* v_absmax = a.v_absmax.f32();
  const MNT_Tensor& grad = *a.grad;
  ForBlocks(a.n, [&](int64_t off, int64_t len) {
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
    WriteWorkingBlock(w, a.working, rounding, off, len);
  });
  if (a.step_counter.present()) *a.step_counter.i32() += 1;
  return Status::Ok();
}

}  // namespace mnt::cpu

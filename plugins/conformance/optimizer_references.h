// Float64 (long double) references of ABI 1.12's memory-light optimizer
// ops and the tolerances a backend's outputs must meet against them: what
// plugin conformance checks a backend's ADAMW8BIT_STEP and ADAFACTOR_STEP
// with, and what the CPU and GPU tests use.
//
// ADAMW8BIT_STEP: the moments the codes and absmax hold (map[code] *
// absmax, with the maps of plugins/backends/common/blockwise_quantization.h),
// AdamW in long double, the blocks' new absmax and the nearest codes. A
// code may differ from the reference's only by one, and only where the
// normalized moment lies within 1e-6 of the midpoint between the two codes'
// values (fp32 arithmetic decides a near tie either way).
//
// ADAFACTOR_STEP: HF transformers.Adafactor's step with exact means and
// norms (plugins/backends/common/adafactor_math.h lists the formulas).
#ifndef MANTISSA_PLUGINS_CONFORMANCE_OPTIMIZER_REFERENCES_H_
#define MANTISSA_PLUGINS_CONFORMANCE_OPTIMIZER_REFERENCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/adafactor_math.h"

namespace mnt::conformance {

// One tensor's ADAMW8BIT_STEP state (its outputs but the working copy).
struct AdamW8bitState {
  std::vector<float> master;
  std::vector<uint8_t> m_codes, v_codes;
  std::vector<float> m_absmax, v_absmax;
};

// What the reference computes: the new weights and moments before
// quantization, each block's new absmax, and the codes nearest to them.
struct AdamW8bitExpected {
  std::vector<long double> master, m, v, m_absmax, v_absmax;
  std::vector<int> m_codes, v_codes;
  // Per block, the largest |m0| + (1 - beta1)(|g| + |m0|): the size of the
  // first moment's terms before the lerp's cancellation, which its fp32
  // rounding is relative to (a cancelled absmax can be far smaller).
  std::vector<long double> m_term_max;
};

// `grad` as the op reads it (the stored values), times `multiplier`.
AdamW8bitExpected AdamW8bitReference(const std::vector<float>& grad, float multiplier,
                                     const AdamW8bitState& in, const MNT_AdamWParams& p,
                                     float lr, int64_t step);

// "" when `got` meets the reference (master within 2e-7 of its size and
// 1e-5 of its update, absmax within 1e-6 relative (the first moment's
// relative to m_term_max when that is larger), codes as above; NaN
// never passes), else the first difference.
std::string CompareAdamW8bit(const AdamW8bitState& in, const AdamW8bitState& got,
                             const AdamW8bitExpected& want);

// One tensor's ADAFACTOR_STEP state: the master, the second moment (row
// state or full), the column state (factored only) and the first moment
// (beta1 != 0 only).
struct AdafactorState {
  std::vector<float> master, second, col, m;
};

struct AdafactorExpected {
  std::vector<long double> master, second, col, m;
  // The first moment's tolerance: 2e-5 of its two terms' sizes.
  std::vector<long double> m_tolerance;
};

AdafactorExpected AdafactorReference(const std::vector<float>& grad, float multiplier,
                                     const FactoredShape& shape, const AdafactorState& in,
                                     const MNT_AdafactorParams& p, float lr, int64_t step);

// "" when `got` meets the reference (states within 2e-6 relative, the first
// moment within 2e-5 of its terms, the master within 2e-7 of its size and
// 2e-5 of its change), else the first difference.
std::string CompareAdafactor(const AdafactorState& in, const AdafactorState& got,
                             const AdafactorExpected& want);

}  // namespace mnt::conformance

#endif  // MANTISSA_PLUGINS_CONFORMANCE_OPTIMIZER_REFERENCES_H_

// MNT_OP_TENSOR_STATS's per-element step and the combination of partial
// results (ABI 1.10; semantics in plugins/abi/mnt_backend.h), shared by the
// CPU backend and the CUDA reduction: the smallest and largest |x| over the
// finite elements, and how many elements are inf or NaN and how many NaN.
//
// Everything works on the fp32 bit pattern of an element (F16 and BF16
// widen to fp32 exactly first): |x| is the pattern with its sign bit
// cleared, which for a finite number orders as the number does, so min and
// max are integer min and max; exponent all ones is inf or NaN (NaN when
// the mantissa is non-zero too). Integer operations are exact and
// unaffected by a compiler's or a GPU's flush-to-zero (subnormals are
// measured as they are) and by -0 (its |x| is +0). min, max and counts
// are order-independent, so partial results may be combined in any order
// and grouping, and every backend gives the same bits.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_TENSOR_STATS_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_TENSOR_STATS_MATH_H_

#include <cstdint>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

// |x| bits of +inf: the first pattern that is not finite.
constexpr uint32_t kTensorStatsInfBits = 0x7f800000u;

// Statistics of some elements; TensorStatsEmpty() before the first.
struct TensorStatsPartial {
  uint32_t min_abs_bits;  // kTensorStatsInfBits: no finite element yet
  uint32_t max_abs_bits;  // 0 when no finite element
  uint64_t nonfinite;     // inf or NaN
  uint64_t nans;
};

MNT_HOST_DEVICE inline TensorStatsPartial TensorStatsEmpty() {
  TensorStatsPartial p;
  p.min_abs_bits = kTensorStatsInfBits;
  p.max_abs_bits = 0;
  p.nonfinite = 0;
  p.nans = 0;
  return p;
}

// One element, given as its fp32 bit pattern.
MNT_HOST_DEVICE inline void TensorStatsAddBits(TensorStatsPartial* p, uint32_t bits) {
  const uint32_t a = bits & 0x7fffffffu;
  if (a >= kTensorStatsInfBits) {
    ++p->nonfinite;
    if (a > kTensorStatsInfBits) ++p->nans;
    return;
  }
  p->min_abs_bits = a < p->min_abs_bits ? a : p->min_abs_bits;
  p->max_abs_bits = a > p->max_abs_bits ? a : p->max_abs_bits;
}

MNT_HOST_DEVICE inline void TensorStatsAdd(TensorStatsPartial* p, float x) {
  TensorStatsAddBits(p, FloatToBits(x));
}

// Element i of F32/F16/BF16 storage as its exact fp32 bit pattern (integer
// widening only; a constant `dtype` folds the switch away).
MNT_HOST_DEVICE inline uint32_t TensorStatsElementBits(MNT_DType dtype, const void* data,
                                                       int64_t i) {
  if (dtype == MNT_DTYPE_F32) return static_cast<const uint32_t*>(data)[i];
  const uint16_t h = static_cast<const uint16_t*>(data)[i];
  return dtype == MNT_DTYPE_F16 ? F16BitsToF32Bits(h) : Bf16BitsToF32Bits(h);
}

// p := p combined with q (either may be empty).
MNT_HOST_DEVICE inline void TensorStatsMerge(TensorStatsPartial* p, const TensorStatsPartial& q) {
  p->min_abs_bits = q.min_abs_bits < p->min_abs_bits ? q.min_abs_bits : p->min_abs_bits;
  p->max_abs_bits = q.max_abs_bits > p->max_abs_bits ? q.max_abs_bits : p->max_abs_bits;
  p->nonfinite += q.nonfinite;
  p->nans += q.nans;
}

// A count as I32, saturating at INT32_MAX.
MNT_HOST_DEVICE inline int32_t TensorStatsCount(uint64_t n) {
  return n > 0x7fffffffull ? 0x7fffffff : static_cast<int32_t>(n);
}

// The op's outputs: range F32 [2] = {smallest |x|, largest |x|} over the
// finite elements (both +0 when none is finite), counts I32 [2] =
// {inf or NaN, NaN}, each saturating at INT32_MAX.
MNT_HOST_DEVICE inline void TensorStatsFinish(const TensorStatsPartial& p, float range[2],
                                              int32_t counts[2]) {
  const bool any_finite = p.min_abs_bits < kTensorStatsInfBits;
  range[0] = BitsToFloat(any_finite ? p.min_abs_bits : 0u);
  range[1] = BitsToFloat(any_finite ? p.max_abs_bits : 0u);
  counts[0] = TensorStatsCount(p.nonfinite);
  counts[1] = TensorStatsCount(p.nans);
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_TENSOR_STATS_MATH_H_

#include "plugins/backends/cpu/collective_math.h"

#include <algorithm>

#include "plugins/backends/common/float_convert.h"

namespace mnt::cpu {
namespace {

float Load(const void* p, int64_t i, MNT_DType dtype) {
  switch (dtype) {
    case MNT_DTYPE_F16: return HalfBitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case MNT_DTYPE_BF16: return Bf16BitsToFloat(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

void Store(void* p, int64_t i, MNT_DType dtype, float v) {
  switch (dtype) {
    case MNT_DTYPE_F16: static_cast<uint16_t*>(p)[i] = FloatToHalfBits(v); break;
    case MNT_DTYPE_BF16: static_cast<uint16_t*>(p)[i] = FloatToBf16Bits(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

}  // namespace

void ReduceInRankOrder(const void* const* chunks, int world, int64_t n, MNT_DType dtype,
                       MNT_ReduceOp op, void* out) {
  const float world_f = static_cast<float>(world);
  for (int64_t i = 0; i < n; ++i) {
    float acc = Load(chunks[0], i, dtype);
    for (int k = 1; k < world; ++k) {
      const float x = Load(chunks[k], i, dtype);
      // std::max would drop a NaN on one side: a NaN anywhere stays NaN,
      // so an overflow on one rank is seen by every rank.
      acc = op == MNT_REDUCE_OP_MAX ? (acc != acc || x != x ? acc + x : std::max(acc, x))
                                    : acc + x;
    }
    if (op == MNT_REDUCE_OP_AVG) acc = acc / world_f;
    Store(out, i, dtype, acc);
  }
}

}  // namespace mnt::cpu

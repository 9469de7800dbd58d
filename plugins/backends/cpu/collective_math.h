// What the CPU backend's collectives compute, apart from moving bytes: the
// chunk each rank reduces and the reduction itself, in rank order. Pure
// functions of their inputs, so the determinism the collectives extension
// promises (mnt_collectives.h) is tested here without MPI.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVE_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVE_MATH_H_

#include <cstdint>

#include "plugins/abi/mnt_collectives.h"
#include "plugins/abi/mnt_common.h"

namespace mnt::cpu {

// The first element of rank r's chunk when n elements are split over
// `world` ranks as evenly as integers allow (r = world gives n).
inline int64_t ChunkBegin(int64_t n, int world, int r) {
  return static_cast<int64_t>((static_cast<__int128>(n) * r) / world);
}

// out[i] = op over ranks of chunks[k][i], k = 0 .. world-1 in that order,
// in fp32: ((x_0 + x_1) + x_2) + ...; AVG divides the fp32 sum by world
// once; a 16-bit out is rounded once (nearest even) from the fp32 value.
// dtype is F32, F16 or BF16 (chunks and out alike). out may alias chunks[k]
// only for k = 0 (the accumulation reads element i of every chunk before
// writing out[i]).
void ReduceInRankOrder(const void* const* chunks, int world, int64_t n, MNT_DType dtype,
                       MNT_ReduceOp op, void* out);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_COLLECTIVE_MATH_H_

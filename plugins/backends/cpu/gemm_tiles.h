// How a GEMM's output is cut into tiles that threads compute independently,
// so its bits do not depend on how many threads run it.
//
// oneDNN's own threading splits the K dimension when the output is small
// (each thread sums part of K, the partial sums are added): on oneDNN 2.6
// the products of gpt2-tiny's weight gradients (64 x 64 x 1024) come out
// different with 1 and 2 threads. The CPU backend changes its team size
// while a run goes on (thread_governor.h), so it gives oneDNN whole tiles
// of C instead: each tile is one single-threaded product over all of K,
// and which tiles exist depends only on the shape and the pool size fixed
// at Backend_Create, never on how many threads take them.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_GEMM_TILES_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_GEMM_TILES_H_

#include <algorithm>
#include <cstdint>

namespace mnt::cpu {

struct GemmTiles {
  bool by_rows = true;  // tiles are row bands of C (else column bands)
  int64_t size = 0;     // rows (or columns) per tile; the last may be short
  int64_t count = 1;    // 1: the whole product in one call

  // [begin, begin + Length(i)) of the split dimension.
  int64_t Begin(int64_t i) const { return i * size; }
  int64_t Length(int64_t i, int64_t extent) const {
    return std::min(size, extent - Begin(i));
  }
};

// Multiply-adds one tile should have at least: ~50-100 us on one core,
// far above a fork/join and enough for oneDNN's kernels to run at speed.
constexpr int64_t kGemmTileMacs = int64_t{1} << 21;
// Tile edges are multiples of this (oneDNN's register blocks are 8-48 wide).
constexpr int64_t kGemmTileAlign = 16;

// C[m, n] = A[m, k] B[k, n] for a pool of `pool` threads: one tile per pool
// thread along the longer of m and n, fewer when the product is small.
inline GemmTiles TileGemm(int64_t m, int64_t n, int64_t k, int pool) {
  GemmTiles t;
  t.by_rows = m >= n;
  const int64_t extent = t.by_rows ? m : n;
  t.size = extent;
  const int64_t by_work = (m * n * k) / kGemmTileMacs;
  const int64_t by_shape = extent / kGemmTileAlign;
  const int64_t wanted = std::min<int64_t>({pool, by_work, by_shape});
  if (wanted < 2) return t;
  const int64_t size = (extent + wanted - 1) / wanted;
  t.size = (size + kGemmTileAlign - 1) / kGemmTileAlign * kGemmTileAlign;
  t.count = (extent + t.size - 1) / t.size;
  return t;
}

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_GEMM_TILES_H_

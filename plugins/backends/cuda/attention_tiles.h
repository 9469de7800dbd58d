// The bookkeeping and merge math of the tiled fallback attention
// (attention.cu), host/device so the CPU replays the kernels' algorithm
// (attention_tiles_test.cc).
//
// Forward: one block per (batch*head, tile of query rows); key/value tiles
// stream through shared memory and each row keeps a running max m and sum l
// of exp(score - m) (online softmax), so no T-long row is ever stored.
// Backward (probabilities recomputed from the saved logsumexp, as the CPU
// reference): one pass per key tile gathers dK and dV over the query tiles
// that see it, another per query tile gathers dQ over its key tiles; no
// atomics, every sum in one fixed order (deterministic).
// Shared memory rows are padded to D + 1 floats so that threads reading the
// same column of different rows hit different banks.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_TILES_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_TILES_H_

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "plugins/backends/common/host_device.h"

namespace mnt::cuda {

// Tile edges tried, largest first (the score tile's width is at most one warp).
constexpr int64_t kAttentionTileSizes[] = {32, 16, 8, 4, 2, 1};

// Floats of one padded shared-memory row of D elements.
MNT_HOST_DEVICE inline int64_t PaddedRow(int64_t d) { return d + 1; }

// Shared memory of each kernel for a tile edge and head dim (bytes).
// Forward: Q, K, V, O tiles, the score tile, per-row m, l and rescale.
MNT_HOST_DEVICE inline size_t ForwardSharedBytes(int64_t tile, int64_t d) {
  return sizeof(float) * (4 * tile * PaddedRow(d) + tile * tile + 3 * tile);
}
// dK/dV pass: K, V, dK, dV, Q, dY tiles, P and dS tiles, per-row lse, delta.
MNT_HOST_DEVICE inline size_t KeyPassSharedBytes(int64_t tile, int64_t d) {
  return sizeof(float) * (6 * tile * PaddedRow(d) + 2 * tile * tile + 2 * tile);
}
// dQ pass: Q, dY, K, V, dQ tiles, the dS tile, per-row lse, delta.
MNT_HOST_DEVICE inline size_t QueryPassSharedBytes(int64_t tile, int64_t d) {
  return sizeof(float) * (5 * tile * PaddedRow(d) + tile * tile + 2 * tile);
}

// The largest tile edge whose shared memory fits `limit` bytes for `bytes`
// (one of the functions above), or 0 when even a single row does not.
template <typename Bytes>
inline int64_t PickAttentionTile(int64_t d, size_t limit, Bytes bytes) {
  for (int64_t tile : kAttentionTileSizes) {
    if (bytes(tile, d) <= limit) return tile;
  }
  return 0;
}

// Rows of a tile starting at `first` in a sequence of t.
MNT_HOST_DEVICE inline int64_t TileRows(int64_t first, int64_t tile, int64_t t) {
  return t - first < tile ? t - first : tile;
}

// Key i' is visible from query i (causal: keys at or before the query).
MNT_HOST_DEVICE inline bool KeyVisible(int64_t query, int64_t key, bool causal) {
  return !causal || key <= query;
}

// One past the last key any query in [q0, q0 + rows) sees.
MNT_HOST_DEVICE inline int64_t KeysEnd(int64_t q0, int64_t rows, int64_t t, bool causal) {
  return causal ? q0 + rows : t;
}

// The first query tile (its first row) with a query that sees a key in
// [k0, ...): causal attention skips the query tiles wholly before k0.
MNT_HOST_DEVICE inline int64_t FirstQueryTile(int64_t k0, int64_t tile, bool causal) {
  return causal ? (k0 / tile) * tile : 0;
}

// Online softmax: folds a tile whose largest score is tile_max into a row's
// running max m. Returns the factor the row's running sum and output are
// scaled by (0 when nothing was accumulated yet) and updates m.
MNT_HOST_DEVICE inline float OnlineSoftmaxRescale(float* m, float tile_max) {
  const float m_old = *m;
  const float m_new = tile_max > m_old ? tile_max : m_old;
  *m = m_new;
  if (m_old == -INFINITY) return 0.0f;
  return expf(m_old - m_new);
}

// A score's weight against the running max: 0 for masked (-inf) scores.
MNT_HOST_DEVICE inline float OnlineSoftmaxWeight(float score, float m) {
  return score == -INFINITY ? 0.0f : expf(score - m);
}

// The row's logsumexp from the final running max and sum (what the forward
// saves for the backward, the CPU reference's lse).
MNT_HOST_DEVICE inline float OnlineSoftmaxLse(float m, float l) { return m + logf(l); }

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_ATTENTION_TILES_H_

// The bookkeeping of the CUDA embedding backward (embedding.cu), host/device
// so the CPU tests it (embedding_buckets_test.cc). The backward sorts
// (bucket key, token index) pairs with a stable radix sort, so each id's
// tokens end up together in ascending token order; one block per run of
// equal keys then sums that id's dout rows in that order (in double, from
// the old value when accumulating): the CPU reference's order, the same
// bits every run, O(N log V) work instead of scanning all N ids per row.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_EMBEDDING_BUCKETS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_EMBEDDING_BUCKETS_H_

#include <cstdint>

#include "plugins/backends/common/host_device.h"

namespace mnt::cuda {

// The sort key of a token: its id, or `vocab` (one bucket past the table,
// never written) for an id outside [0, vocab). Bad ids are flagged by the
// same kernel; mapping them here keeps them out of every real id's run.
MNT_HOST_DEVICE inline int32_t EmbeddingBucket(int32_t id, int64_t vocab) {
  return id >= 0 && id < vocab ? id : static_cast<int32_t>(vocab);
}

// The low key bits the radix sort must look at so that every key in
// [0, vocab] sorts correctly (fewer bits, fewer passes).
MNT_HOST_DEVICE inline int EmbeddingSortBits(int64_t vocab) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) <= vocab) ++bits;
  return bits;
}

// Sorted position p starts a run of equal keys.
MNT_HOST_DEVICE inline bool RunStartsAt(const int32_t* keys, int64_t p) {
  return p == 0 || keys[p] != keys[p - 1];
}

// One past the last position of the run that starts at p.
MNT_HOST_DEVICE inline int64_t RunEnd(const int32_t* keys, int64_t p, int64_t n) {
  int64_t q = p + 1;
  while (q < n && keys[q] == keys[p]) ++q;
  return q;
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_EMBEDDING_BUCKETS_H_

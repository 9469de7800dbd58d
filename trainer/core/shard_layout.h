// Where data parallelism cuts the flat parameter layout (parameters.h) into
// ranks' shares, for ZeRO-1's reduce-scatter and all-gather and for the
// global gradient norm every data-parallel run adds up from ranks' parts.
//
// The flat layout is cut into buckets (each a multiple of world x alignment
// elements) and every bucket into `world` equal chunks: rank r's share is
// its chunk of each bucket, so one REDUCE_SCATTER per bucket leaves the
// averaged gradient of exactly that share on rank r, and one in-place
// ALL_GATHER per bucket brings every share's updated weights to every rank.
// A share cuts through parameters wherever a chunk ends: the optimizer steps
// a parameter as the pieces ranks own (elementwise ops give the same bits).
#ifndef MANTISSA_TRAINER_CORE_SHARD_LAYOUT_H_
#define MANTISSA_TRAINER_CORE_SHARD_LAYOUT_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace mnt::trainer {

// Part of one parameter that lies in one rank's share, or the whole of it.
struct ParamPiece {
  int64_t param = 0;  // index into the parameter table
  int64_t first = 0;  // the piece's first element within the parameter
  int64_t numel = 0;
  int64_t flat = 0;   // its first element in the flat layout
  int64_t shard = 0;  // its first element in the rank's sharded buffers
};

class ShardLayout {
 public:
  ShardLayout() = default;  // no parameters, one rank
  // `offsets`: FlatOffsets of the parameters (one entry each, then the
  // total); `numels` their sizes. Buckets hold about `bucket_elements`
  // (0: one bucket), rounded up to a multiple of world x `alignment`, and
  // the flat total is padded to such a multiple too.
  ShardLayout(std::vector<int64_t> offsets, std::vector<int64_t> numels, int world,
              int64_t bucket_elements, int64_t alignment);

  int world() const { return world_; }
  // The parameters' flat offsets and sizes it was made from.
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::vector<int64_t>& numels() const { return numels_; }
  // Flat elements, the padding for the last bucket included.
  int64_t total() const { return total_; }
  // [begin, end) of each bucket, in order, covering [0, total).
  const std::vector<std::pair<int64_t, int64_t>>& buckets() const { return buckets_; }
  // Rank r's chunk of bucket b: [begin, end) of the flat layout.
  std::pair<int64_t, int64_t> Chunk(int64_t bucket, int rank) const;
  // Elements of every rank's share (total / world); a rank's sharded
  // buffers hold its chunks back to back, in bucket order.
  int64_t share() const { return total_ / world_; }
  // Where bucket b's chunk starts in a rank's sharded buffers.
  int64_t ShardOffset(int64_t bucket) const;

  // The parameter elements in rank r's share, as pieces in flat order
  // (the padding between parameters is in no piece).
  std::vector<ParamPiece> PiecesOf(int rank) const;

 private:
  std::vector<int64_t> offsets_, numels_;
  int world_ = 1;
  int64_t total_ = 0;
  std::vector<std::pair<int64_t, int64_t>> buckets_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_SHARD_LAYOUT_H_

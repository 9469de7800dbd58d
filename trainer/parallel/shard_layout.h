// The flat parameter layout (trainer/core/parameters.h keeps its buffers)
// and where data parallelism cuts it into ranks' shares, for ZeRO-1's
// reduce-scatter and all-gather and for the global gradient norm every
// data-parallel run adds up from ranks' parts. The gradient synchronisation
// (gradient_sync.h) and the memory estimate both take the layout from here.
//
// The flat layout is cut into buckets (each a multiple of world x alignment
// elements) and every bucket into `world` equal chunks: rank r's share is
// its chunk of each bucket, so one REDUCE_SCATTER per bucket leaves the
// averaged gradient of exactly that share on rank r, and one in-place
// ALL_GATHER per bucket brings every share's updated weights to every rank.
// A share cuts through parameters wherever a chunk ends: the optimizer steps
// a parameter as the pieces ranks own (elementwise ops give the same bits).
#ifndef MANTISSA_TRAINER_PARALLEL_SHARD_LAYOUT_H_
#define MANTISSA_TRAINER_PARALLEL_SHARD_LAYOUT_H_

#include <cstdint>
#include <string>
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

// This process's place in a data-parallel job. world > 1 cuts the flat
// layout into the ranks' shares (shard_layout.h): the global gradient norm
// is then always added up from the shares' parts, so ZeRO-0 and ZeRO-1 clip
// alike. `zero1` (--zero_stage=1): this rank keeps the fp32 master weights,
// the optimizer state and the averaged gradient of its share only, and
// steps only that.
struct ParamShard {
  int rank = 0;
  int world = 1;
  bool zero1 = false;
  int64_t bucket_bytes = 0;  // ZeRO-1's reduce-scatter buckets (0: one)
  // Where tensors and shares may start, in elements (0: kFlatAlignmentElements).
  // adamw8bit's quantization blocks (256) make its pieces start on a block.
  int64_t alignment = 0;
};

// Each tensor of the flat buffers starts on a 256-byte boundary (128
// elements: 256 bytes in 16 bits, 512 in fp32), as aligned as a separate
// allocation of the backend, so vector loads and cuBLASLt's alignment-keyed
// plans see no difference.
inline constexpr int64_t kFlatAlignmentElements = 128;

// Element offsets of tensors of `numels` elements laid out back to back,
// each starting at a multiple of `alignment` elements; one more entry: the
// total (a multiple of `alignment`).
std::vector<int64_t> FlatOffsets(const std::vector<int64_t>& numels, int64_t alignment);

// adamw8bit's quantization block (MNT_QUANTIZATION_BLOCK_SIZE, ABI 1.12):
// a piece of a parameter that ZeRO-1 steps must start on one.
inline constexpr int64_t kQuantizationBlockElements = 256;

// ParamShard::alignment for --optimizer=`optimizer`: whole quantization
// blocks for adamw8bit (under ZeRO-0 too, so both stages cut the same
// shares and add the gradient norm alike), else the default.
int64_t ShardAlignmentFor(const std::string& optimizer);

// The trainer's flat layout of tensors of `numels` elements (FlatOffsets at
// kFlatAlignmentElements) cut into `shard`'s ranks' shares, with buckets of
// shard.bucket_bytes of the exchanged gradient (`exchanged_element_bytes`
// each: fp32 master gradients, or the gradients). One rank: one share, the
// flat total unpadded.
ShardLayout MakeShardLayout(const std::vector<int64_t>& numels, const ParamShard& shard,
                            int64_t exchanged_element_bytes);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_SHARD_LAYOUT_H_

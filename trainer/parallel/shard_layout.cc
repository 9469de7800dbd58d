#include "trainer/parallel/shard_layout.h"

#include <algorithm>
#include <utility>

namespace mnt::trainer {

ShardLayout::ShardLayout(std::vector<int64_t> offsets, std::vector<int64_t> numels, int world,
                         int64_t bucket_elements, int64_t alignment)
    : offsets_(std::move(offsets)), numels_(std::move(numels)), world_(std::max(world, 1)) {
  const int64_t unit = world_ * std::max<int64_t>(alignment, 1);
  auto round_up = [unit](int64_t n) { return (n + unit - 1) / unit * unit; };
  total_ = round_up(offsets_.empty() ? 0 : offsets_.back());
  const int64_t bucket = bucket_elements > 0 ? round_up(bucket_elements) : total_;
  for (int64_t begin = 0; begin < total_; begin += bucket) {
    buckets_.push_back({begin, std::min(total_, begin + bucket)});
  }
}

std::pair<int64_t, int64_t> ShardLayout::Chunk(int64_t bucket, int rank) const {
  const auto [begin, end] = buckets_[bucket];
  const int64_t chunk = (end - begin) / world_;
  return {begin + rank * chunk, begin + (rank + 1) * chunk};
}

int64_t ShardLayout::ShardOffset(int64_t bucket) const { return buckets_[bucket].first / world_; }

std::vector<ParamPiece> ShardLayout::PiecesOf(int rank) const {
  std::vector<ParamPiece> pieces;
  const int64_t count = static_cast<int64_t>(numels_.size());
  int64_t param = 0;  // chunks go up the flat layout, and so do parameters
  for (int64_t b = 0; b < static_cast<int64_t>(buckets_.size()); ++b) {
    const auto [begin, end] = Chunk(b, rank);
    while (param < count && offsets_[param] + numels_[param] <= begin) ++param;
    for (int64_t p = param; p < count && offsets_[p] < end; ++p) {
      const int64_t from = std::max(begin, offsets_[p]);
      const int64_t to = std::min(end, offsets_[p] + numels_[p]);
      if (from >= to) continue;
      pieces.push_back({p, from - offsets_[p], to - from, from, ShardOffset(b) + (from - begin)});
    }
  }
  return pieces;
}

int64_t ShardAlignmentFor(const std::string& optimizer) {
  return optimizer == "adamw8bit" ? kQuantizationBlockElements : 0;
}

ShardLayout MakeShardLayout(const std::vector<int64_t>& numels, const ParamShard& shard,
                            int64_t exchanged_element_bytes) {
  const int64_t alignment = shard.alignment > 0 ? shard.alignment : kFlatAlignmentElements;
  return ShardLayout(FlatOffsets(numels, alignment), numels, shard.world,
                     shard.bucket_bytes / exchanged_element_bytes, alignment);
}

std::vector<int64_t> FlatOffsets(const std::vector<int64_t>& numels, int64_t alignment) {
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (int64_t n : numels) {
    offsets.push_back(at);
    at += n;
    at = (at + alignment - 1) / alignment * alignment;
  }
  offsets.push_back(at);
  return offsets;
}

}  // namespace mnt::trainer

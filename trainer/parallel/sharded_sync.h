// ZeRO-1: rank r keeps the fp32 master weights, optimizer state and
// averaged gradient of its share of the flat layout only (shard_layout.h).
// Each bucket of the gradient is reduce-scattered into the shares; loss
// scaling joins the ranks' inf/NaN checks and norm parts; after the
// optimizer every bucket's working weights are all-gathered in place, so
// every rank holds the bits its share's rank rounded.
#ifndef MANTISSA_TRAINER_PARALLEL_SHARDED_SYNC_H_
#define MANTISSA_TRAINER_PARALLEL_SHARDED_SYNC_H_

#include "trainer/parallel/bucketed_sync.h"

namespace mnt::trainer {

class ShardedSync : public BucketedSync {
 public:
  using BucketedSync::BucketedSync;

  absl::Status AfterOptimizer() override;
  // Each rank checked its share for inf/NaN: the ranks' finds are maxed.
  std::function<absl::Status(const MNT_Tensor&)> found_inf_reduction() override;
  // Naming overflowed parameters takes every rank (each checks its share).
  absl::StatusOr<bool> RanksAgreeToAsk(bool rank0_asks) override;
  absl::StatusOr<std::set<int64_t>> JoinFlagged(std::set<int64_t> mine) override;
  // The ranks hold different shares: nothing to compare.
  absl::Status CheckRanksHoldOneState(const std::string&, int64_t) override {
    return absl::OkStatus();
  }
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)> all_gather()
      override;

 protected:
  absl::Status StartBucket(int64_t b) override;
  std::string DescribeExchange() const override;
  std::string DescribeAfter() const override;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_SHARDED_SYNC_H_

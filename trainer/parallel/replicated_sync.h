// ZeRO-0: every rank keeps every parameter's master weights and optimizer
// state; each bucket of the gradient is averaged over the ranks (an
// all-reduce), so every rank unscales, clips, skips and steps on the same
// bits, and checks that it does at every checkpoint.
#ifndef MANTISSA_TRAINER_PARALLEL_REPLICATED_SYNC_H_
#define MANTISSA_TRAINER_PARALLEL_REPLICATED_SYNC_H_

#include "trainer/parallel/bucketed_sync.h"

namespace mnt::trainer {

class ReplicatedSync : public BucketedSync {
 public:
  using BucketedSync::BucketedSync;

  absl::Status AfterOptimizer() override { return absl::OkStatus(); }
  // Every rank checks the same averaged gradient: nothing to join.
  std::function<absl::Status(const MNT_Tensor&)> found_inf_reduction() override {
    return nullptr;
  }
  absl::StatusOr<bool> RanksAgreeToAsk(bool mine) override { return mine; }
  absl::StatusOr<std::set<int64_t>> JoinFlagged(std::set<int64_t> mine) override {
    return mine;
  }
  absl::Status CheckRanksHoldOneState(const std::string& fingerprint, int64_t step) override;
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)> all_gather()
      override {
    return nullptr;
  }

 protected:
  absl::Status StartBucket(int64_t b) override;
  std::string DescribeExchange() const override;
  std::string DescribeAfter() const override { return ""; }
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_REPLICATED_SYNC_H_

// One rank: nothing to exchange. The gradients of each micro-batch go into
// the master gradients after its backward; every reduction is the identity.
#ifndef MANTISSA_TRAINER_PARALLEL_LOCAL_SYNC_H_
#define MANTISSA_TRAINER_PARALLEL_LOCAL_SYNC_H_

#include "trainer/parallel/gradient_sync.h"

namespace mnt::trainer {

class LocalSync : public GradientSync {
 public:
  explicit LocalSync(GradientBuffers* buffers) : buffers_(buffers) {}

  std::vector<int64_t> LocalBatch(const std::function<std::vector<int64_t>(int64_t)>& draw,
                                  int64_t batch_size) override {
    return draw(batch_size);
  }
  absl::Status AverageLoss(const MNT_Tensor&) override { return absl::OkStatus(); }
  void BeforeBackward(int64_t, int64_t) override {}
  absl::Status AfterBackward(int64_t micro) override {
    return buffers_->AccumulateMasterGradients(micro);
  }
  absl::Status FinishExchange() override { return BeforeExchange(); }
  absl::Status AfterOptimizer() override { return absl::OkStatus(); }
  std::function<absl::Status(const MNT_Tensor&)> found_inf_reduction() override {
    return nullptr;
  }
  std::function<absl::Status(const MNT_Tensor&)> norm_reduction() override { return nullptr; }
  absl::Status MaxOverRanks(const MNT_Tensor&) override { return absl::OkStatus(); }
  absl::StatusOr<bool> RanksAgreeToAsk(bool rank0_asks) override { return rank0_asks; }
  absl::StatusOr<std::set<int64_t>> JoinFlagged(std::set<int64_t> mine) override {
    return mine;
  }
  absl::StatusOr<int> AgreeStopSignal(int mine) override { return mine; }
  absl::Status CheckRanksHoldOneState(const std::string&, int64_t) override {
    return absl::OkStatus();
  }
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)> all_gather()
      override {
    return nullptr;
  }
  bool writes() const override { return true; }
  std::string Description() const override { return ""; }
  SyncStats Stats() const override { return {}; }

 private:
  GradientBuffers* buffers_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_LOCAL_SYNC_H_

// What the data-parallel strategies share: the backend's collectives
// (data_parallel.h), the flat layout's buckets, and the exchange in backward.
//
// Each bucket's exchange is started as soon as its gradients are final: in
// backward, when the model hands over finished gradient slices (ABI 1.11,
// bucket_readiness.h) and this is the step's last micro-batch, else after
// backward, in bucket order. FinishExchange joins them all. How a bucket is
// exchanged (averaged, or reduce-scattered into the shares) and what
// follows the optimizer is the strategy's (replicated_sync.h,
// sharded_sync.h).
#ifndef MANTISSA_TRAINER_PARALLEL_BUCKETED_SYNC_H_
#define MANTISSA_TRAINER_PARALLEL_BUCKETED_SYNC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/parallel/bucket_readiness.h"
#include "trainer/parallel/data_parallel.h"
#include "trainer/parallel/gradient_sync.h"

namespace mnt::trainer {

class BucketedSync : public GradientSync {
 public:
  // `model` hands over finished gradients when `hand_over` (the caller
  // checked it can).
  BucketedSync(const Setup& setup, GradientBuffers* buffers,
               std::unique_ptr<DataParallel> collectives, sdk::ModelClient* model,
               bool hand_over);

  std::vector<int64_t> LocalBatch(const std::function<std::vector<int64_t>(int64_t)>& draw,
                                  int64_t batch_size) override;
  absl::Status AverageLoss(const MNT_Tensor& loss) override;
  void BeforeBackward(int64_t micro, int64_t micro_batches) override;
  absl::Status AfterBackward(int64_t micro) override;
  absl::Status FinishExchange() override;
  std::function<absl::Status(const MNT_Tensor&)> norm_reduction() override;
  absl::Status MaxOverRanks(const MNT_Tensor& t) override;
  absl::StatusOr<int> AgreeStopSignal(int mine) override;
  bool writes() const override { return collectives_->rank() == 0; }
  std::string Description() const override;
  SyncStats Stats() const override;

 protected:
  // Starts bucket b's exchange (b: the layout's bucket index).
  virtual absl::Status StartBucket(int64_t b) = 0;
  // "averaged in 25 MiB buckets" and what the strategy adds to the banner.
  virtual std::string DescribeExchange() const = 0;
  virtual std::string DescribeAfter() const = 0;

  const Setup setup_;
  GradientBuffers* const buffers_;
  const std::unique_ptr<DataParallel> collectives_;
  HostComm& ranks() const { return collectives_->host(); }

 private:
  // The model's hand-over (a C callback: errors wait in handover_ until
  // Backward returns).
  static void OnGradientReady(void* sync, int64_t param, int64_t first, int64_t count);
  absl::Status HandleGradientReady(int64_t param, int64_t first, int64_t count);
  absl::Status ExchangeBucket(int64_t b);

  std::unique_ptr<BucketReadiness> readiness_;  // exchange in backward only
  struct Handover {
    bool armed = false;
    int64_t micro = 0;
    bool last_micro = false;
    absl::Status error;
  } handover_;
  int64_t buckets_exchanged_ = 0, buckets_in_backward_ = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_BUCKETED_SYNC_H_

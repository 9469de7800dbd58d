// How the ranks' gradients become one before the optimizer: the seam the
// training step calls at a few named points, whatever the strategy.
//
//   for each micro-batch:  AverageLoss(loss)         after the forward
//                          BeforeBackward(micro)      arms the hand-over
//                          AfterBackward(micro)       master gradients, hand-over checked
//   once per step:         FinishExchange()           the global gradient on every rank
//                          (loss scaling: MaxOverRanks / SumOverRanks as it needs)
//                          AfterOptimizer()           every rank's working weights
//
// Three strategies implement it: one rank (nothing to exchange), replicated
// (ZeRO-0: every rank averages every bucket of the gradient) and sharded
// (ZeRO-1: each bucket reduce-scattered into the ranks' shares, the working
// weights all-gathered after the update). The data-parallel ones own the
// buckets, the exchange in backward (bucket readiness and the model's
// gradient hand-over, ABI 1.11), the ranks' agreement checks and their
// banner line; the rest of the trainer does not know how many ranks there
// are.
#ifndef MANTISSA_TRAINER_PARALLEL_GRADIENT_SYNC_H_
#define MANTISSA_TRAINER_PARALLEL_GRADIENT_SYNC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model_client.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/parallel/gradient_buffers.h"
#include "trainer/parallel/host_comm.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {

// What a run reports of its synchronisation.
struct SyncStats {
  int ranks = 1;
  double collective_seconds = 0;
  int64_t collective_calls = 0;
  int64_t buckets_exchanged = 0;
  int64_t buckets_in_backward = 0;  // issued while backward went on
  int64_t buckets_started = 0;      // running while the trainer went on
};

class GradientSync {
 public:
  // Where this rank sits and what it runs on; all borrowed, outliving the
  // synchronisation.
  struct Setup {
    const mantissa::TrainConfig* config = nullptr;
    HostComm* ranks = nullptr;  // nullptr or one rank: no data parallelism
    const sdk::BackendClient* client = nullptr;
    std::string device_name;    // for the banner
  };

  // This rank's place in the flat layout (ParameterStore::Create's shard):
  // the ranks, ZeRO-1 or not, the bucket size.
  static ParamShard ShardOf(const Setup& setup);

  // The strategy `setup` asks for; `buffers` and `model` outlive it. With a
  // model that hands over finished gradients (ABI 1.11) and
  // --exchange_in_backward=auto, it registers itself as the model's
  // gradient_ready callback.
  static absl::StatusOr<std::unique_ptr<GradientSync>> Create(const Setup& setup,
                                                              GradientBuffers* buffers,
                                                              sdk::ModelClient* model);
  virtual ~GradientSync() = default;

  // Called before the step's first exchange is issued (bucket 0's, or, for
  // one rank, at FinishExchange): fault injection's inf gradient.
  void set_before_exchange(std::function<absl::Status()> hook) {
    before_exchange_ = std::move(hook);
  }

  // This rank's part of each global batch the sampler draws: `draw(n)`
  // draws n example indices (the global batch of every rank's parts).
  virtual std::vector<int64_t> LocalBatch(const std::function<std::vector<int64_t>(int64_t)>& draw,
                                          int64_t batch_size) = 0;

  // A micro-batch's mean loss (F32 [1] on the device), averaged over ranks.
  virtual absl::Status AverageLoss(const MNT_Tensor& loss) = 0;
  // Around micro-batch `micro`'s backward (of `micro_batches`).
  virtual void BeforeBackward(int64_t micro, int64_t micro_batches) = 0;
  virtual absl::Status AfterBackward(int64_t micro) = 0;
  // After the last micro-batch: the global gradient on every rank (under
  // ZeRO-1, the average of its share).
  virtual absl::Status FinishExchange() = 0;
  // After the optimizer stepped (and after init or a restore): every
  // share's working weights on every rank (a no-op unless sharded).
  virtual absl::Status AfterOptimizer() = 0;

  // The reductions loss scaling needs, in place on an F32 [1] scalar:
  // found_inf's max when ranks check different elements, and the sum of
  // the ranks' parts of the squared norm; null when there is nothing to
  // reduce.
  virtual std::function<absl::Status(const MNT_Tensor&)> found_inf_reduction() = 0;
  virtual std::function<absl::Status(const MNT_Tensor&)> norm_reduction() = 0;
  // t = every rank's elementwise max of t (FP8 amax), in place.
  virtual absl::Status MaxOverRanks(const MNT_Tensor& t) = 0;

  // Whether rank 0 asks for something every rank must take part in (a
  // collective answer); `rank0_asks` is rank 0's wish.
  virtual absl::StatusOr<bool> RanksAgreeToAsk(bool rank0_asks) = 0;
  // Parameter indices found non-finite on this rank, joined with every
  // rank's (each checks what it holds).
  virtual absl::StatusOr<std::set<int64_t>> JoinFlagged(std::set<int64_t> mine) = 0;
  // The stop signal every rank agrees on (any rank's).
  virtual absl::StatusOr<int> AgreeStopSignal(int mine) = 0;
  // Every rank holds the same training state (`fingerprint` of it), or an
  // error naming the first rank that differs; a no-op where ranks hold
  // different shares.
  virtual absl::Status CheckRanksHoldOneState(const std::string& fingerprint, int64_t step) = 0;
  // ZeRO-1's checkpoint assembly: every rank's bytes to every rank (null
  // where ranks hold whole tensors).
  virtual std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)>
  all_gather() = 0;

  // This rank writes checkpoints and logs (rank 0).
  virtual bool writes() const = 0;
  // One line on the ranks, the global batch and the collectives ("" for
  // one rank).
  virtual std::string Description() const = 0;
  virtual SyncStats Stats() const = 0;

 protected:
  absl::Status BeforeExchange() { return before_exchange_ ? before_exchange_() : absl::OkStatus(); }

 private:
  std::function<absl::Status()> before_exchange_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_GRADIENT_SYNC_H_

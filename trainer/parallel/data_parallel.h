// Data parallelism on the device side: the backend's communicator (its
// collectives extension, mnt_collectives.h), created from a unique id that
// rank 0's backend makes and HostComm broadcasts, and the averages the
// training step needs: each micro-batch's loss, and the gradients in
// buckets before the optimizer (so every rank unscales, clips, skips and
// steps on the same bits, and nothing else needs agreeing on).
#ifndef MANTISSA_TRAINER_PARALLEL_DATA_PARALLEL_H_
#define MANTISSA_TRAINER_PARALLEL_DATA_PARALLEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/collectives_client.h"
#include "trainer/parallel/host_comm.h"

namespace mnt::trainer {

class DataParallel {
 public:
  // `host` and `client`'s backend instance outlive the object.
  // FailedPrecondition when the backend offers no collectives extension.
  static absl::StatusOr<std::unique_ptr<DataParallel>> Create(HostComm* host,
                                                              const sdk::BackendClient& client);
  ~DataParallel();  // destroys the communicator (before the backend goes)

  int rank() const { return host_->rank(); }
  int world_size() const { return host_->world_size(); }
  HostComm& host() const { return *host_; }

  // t = the average over ranks of t, in place.
  absl::Status AverageInPlace(const MNT_Tensor& t);
  // t = the elementwise max of every rank's t, in place (FP8 amax).
  absl::Status MaxInPlace(const MNT_Tensor& t);
  // t = the sum over ranks of t, in place (the squared gradient norm's
  // parts).
  absl::Status SumInPlace(const MNT_Tensor& t);
  // ZeRO-1's all-gather: every rank's chunk of `all` (world equal chunks in
  // rank order) from that rank, in place.
  absl::Status GatherInPlace(const MNT_Tensor& all);

  // Started exchanges: issued now, running while the caller goes on (the
  // backend's collectives extension version 2, Collectives_Start), finished
  // by Join. The caller must not touch the tensors until then. With a
  // version-1 backend they run before returning.
  absl::Status StartAverage(const MNT_Tensor& t);
  // ZeRO-1's reduce-scatter: `mine` (n elements) = the average over ranks
  // of this rank's chunk of `all` (world x n elements, chunks in rank order).
  absl::Status StartAverageScattered(const MNT_Tensor& all, const MNT_Tensor& mine);
  // Waits for every started exchange, in issue order; the first error.
  absl::Status Join();
  // The backend starts collectives (version 2 of its extension).
  bool starts_collectives() const;

  // Seconds the host spent in collective calls since creation: the whole
  // collective for a run one, issuing and joining for a started one (its
  // exchange overlaps the caller's work in between).
  double collective_seconds() const { return collective_seconds_; }
  int64_t collective_calls() const { return collective_calls_; }

 private:
  DataParallel(HostComm* host, const sdk::CollectivesClient& collectives)
      : host_(host), collectives_(collectives) {}
  absl::Status Run(MNT_CollectiveOp op, MNT_ReduceOp reduce, const MNT_Tensor& in,
                   const MNT_Tensor& out, int root = 0);
  absl::Status Start(MNT_CollectiveOp op, MNT_ReduceOp reduce, const MNT_Tensor& in,
                     const MNT_Tensor& out);

  HostComm* host_;
  sdk::CollectivesClient collectives_;
  std::unique_ptr<sdk::Communicator> comm_;
  std::vector<sdk::CollectiveWork> started_;  // in issue order, not yet joined
  double collective_seconds_ = 0;
  int64_t collective_calls_ = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_DATA_PARALLEL_H_

// The host side of a data-parallel job: the few small exchanges between
// ranks that are not tensors on a device (the collectives' unique id, the
// start-up agreement check, evaluation sums, the stop decision), over MPI.
// Every rank must make the same calls in the same order.
#ifndef MANTISSA_TRAINER_PARALLEL_HOST_COMM_H_
#define MANTISSA_TRAINER_PARALLEL_HOST_COMM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mnt::trainer {

class HostComm {
 public:
  // Initialises MPI (loaded at run time, third_party/mpi) and checks that
  // it sees `expected_world` ranks (the launcher's count).
  // `local_rank`: the launcher's index of this rank on its machine (which
  // GPU it takes; launch.h), kept for the trainer.
  static absl::StatusOr<std::unique_ptr<HostComm>> Create(int expected_world,
                                                          int local_rank = 0);
  // Finalises MPI when this object initialised it.
  ~HostComm();

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  int local_rank() const { return local_rank_; }

  // Rank 0's `bytes` on every rank.
  absl::Status Broadcast(std::string* bytes);
  // Every rank's `mine`, in rank order.
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& mine);
  // Element-wise sums over ranks, added in rank order (the same bits on
  // every rank and every run).
  absl::StatusOr<std::vector<double>> SumInRankOrder(const std::vector<double>& mine);
  // Whether any rank passed true.
  absl::StatusOr<bool> Any(bool mine);
  // Ends every rank of the job now (MPI_Abort): for a rank that cannot go
  // on while the others wait in a collective.
  [[noreturn]] void AbortJob(int exit_code);

 private:
  HostComm() = default;
  int rank_ = 0;
  int world_ = 1;
  int local_rank_ = 0;
  bool finalize_ = false;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_HOST_COMM_H_

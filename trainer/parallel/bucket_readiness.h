// Which buckets of the flat gradient a backward has finished, from the
// slices a model hands over (ABI 1.11, MNT_CAPABILITY_MODEL_GRADIENT_READY):
// a bucket is complete once every parameter element in it is, and its
// exchange can then be issued while backward goes on. Padding counts as
// finished from the start.
#ifndef MANTISSA_TRAINER_PARALLEL_BUCKET_READINESS_H_
#define MANTISSA_TRAINER_PARALLEL_BUCKET_READINESS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {

class BucketReadiness {
 public:
  explicit BucketReadiness(const ShardLayout& layout);

  // A new backward: nothing finished yet.
  void Reset();
  // Elements [first, first + count) of parameter `param` are finished;
  // appends the buckets this completes to *completed (in the order they
  // complete). InvalidArgument for a slice outside the parameter, or one
  // reported twice (a model breaking the hand-over's contract).
  absl::Status Mark(int64_t param, int64_t first, int64_t count,
                    std::vector<int64_t>* completed);
  // Buckets not yet complete (or not yet handed out by Mark), in order.
  std::vector<int64_t> Unfinished() const;
  // Parameter elements handed over since Reset, and in all.
  int64_t finished_elements() const { return finished_; }
  int64_t total_elements() const { return total_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> buckets_;
  std::vector<int64_t> offsets_, numels_;
  std::vector<int64_t> needed_;     // parameter elements per bucket
  std::vector<int64_t> remaining_;  // not finished yet, per bucket
  std::vector<bool> issued_;
  // Per parameter, the finished slices' element count, and a bitmap-free
  // guard against double reports: the sum must not pass numel.
  std::vector<int64_t> finished_per_param_;
  int64_t finished_ = 0, total_ = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_BUCKET_READINESS_H_

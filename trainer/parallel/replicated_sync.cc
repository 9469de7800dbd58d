#include "trainer/parallel/replicated_sync.h"

#include "absl/strings/str_cat.h"

namespace mnt::trainer {

absl::Status ReplicatedSync::StartBucket(int64_t b) {
  const auto [begin, end] = buffers_->layout().buckets()[b];
  return collectives_->StartAverage(buffers_->FlatOptimizerGrads(begin, end));
}

absl::Status ReplicatedSync::CheckRanksHoldOneState(const std::string& fingerprint,
                                                    int64_t step) {
  // A rank whose state drifted would otherwise go unnoticed: rank 0 alone
  // writes the checkpoint.
  auto all = ranks().AllGather(fingerprint);
  if (!all.ok()) return all.status();
  for (size_t r = 1; r < all->size(); ++r) {
    if ((*all)[r] == (*all)[0]) continue;
    return absl::InternalError(absl::StrCat(
        "data parallel: rank ", r, "'s training state differs from rank 0's at step ", step,
        " (", (*all)[r], " vs ", (*all)[0],
        "); the ranks must step on the same averaged gradient: does the backend's "
        "all-reduce give every rank the same bits?"));
  }
  return absl::OkStatus();
}

std::string ReplicatedSync::DescribeExchange() const {
  const double mb = setup_.config->bucket_mb();
  return absl::StrCat("averaged in ",
                      mb > 0 ? absl::StrCat(mb, " MiB buckets") : std::string("one bucket"));
}

}  // namespace mnt::trainer

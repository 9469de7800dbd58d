#include "trainer/parallel/bucket_readiness.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mnt::trainer {

BucketReadiness::BucketReadiness(const ShardLayout& layout)
    : buckets_(layout.buckets()), offsets_(layout.offsets()), numels_(layout.numels()) {
  needed_.assign(buckets_.size(), 0);
  for (size_t p = 0; p < numels_.size(); ++p) {
    total_ += numels_[p];
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const int64_t from = std::max(buckets_[b].first, offsets_[p]);
      const int64_t to = std::min(buckets_[b].second, offsets_[p] + numels_[p]);
      if (from < to) needed_[b] += to - from;
    }
  }
  Reset();
}

void BucketReadiness::Reset() {
  remaining_ = needed_;
  issued_.assign(buckets_.size(), false);
  finished_per_param_.assign(numels_.size(), 0);
  finished_ = 0;
}

absl::Status BucketReadiness::Mark(int64_t param, int64_t first, int64_t count,
                                   std::vector<int64_t>* completed) {
  if (param < 0 || param >= static_cast<int64_t>(numels_.size()) || first < 0 || count < 1 ||
      count > numels_[param] - first) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handed over elements [", first, ", ", first + count, ") of parameter ", param,
        ", which is not a slice of one of the ", numels_.size(), " parameters"));
  }
  if (finished_per_param_[param] + count > numels_[param]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handed over more of parameter ", param, "'s ", numels_[param],
        " gradient elements than it has (a slice reported twice)"));
  }
  finished_per_param_[param] += count;
  finished_ += count;
  const int64_t begin = offsets_[param] + first, end = begin + count;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const int64_t from = std::max(buckets_[b].first, begin);
    const int64_t to = std::min(buckets_[b].second, end);
    if (from >= to) continue;
    remaining_[b] -= to - from;
    if (remaining_[b] == 0 && !issued_[b]) {
      issued_[b] = true;
      completed->push_back(static_cast<int64_t>(b));
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> BucketReadiness::Unfinished() const {
  std::vector<int64_t> out;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (!issued_[b]) out.push_back(static_cast<int64_t>(b));
  }
  return out;
}

}  // namespace mnt::trainer

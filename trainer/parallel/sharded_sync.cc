#include "trainer/parallel/sharded_sync.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mnt::trainer {

absl::Status ShardedSync::StartBucket(int64_t b) {
  // The bucket reduce-scattered: a rank receives the average of its chunk
  // only, into its share's gradient buffer.
  const ShardLayout& layout = buffers_->layout();
  const auto [begin, end] = layout.buckets()[b];
  const MNT_Tensor mine =
      buffers_->ShardGrads(layout.ShardOffset(b), (end - begin) / layout.world());
  return collectives_->StartAverageScattered(buffers_->FlatOptimizerGrads(begin, end), mine);
}

absl::Status ShardedSync::AfterOptimizer() {
  // Every rank's updated chunk of each bucket to every rank, in place: bytes
  // copied, so every rank holds the bits its share's rank rounded.
  for (const auto& [begin, end] : buffers_->layout().buckets()) {
    if (auto s = collectives_->GatherInPlace(buffers_->FlatWorkingWeights(begin, end)); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

std::function<absl::Status(const MNT_Tensor&)> ShardedSync::found_inf_reduction() {
  return [this](const MNT_Tensor& t) { return collectives_->MaxInPlace(t); };
}

absl::StatusOr<bool> ShardedSync::RanksAgreeToAsk(bool rank0_asks) {
  auto asked = ranks().SumInRankOrder({ranks().rank() == 0 && rank0_asks ? 1.0 : 0.0});
  if (!asked.ok()) return asked.status();
  return (*asked)[0] != 0;
}

absl::StatusOr<std::set<int64_t>> ShardedSync::JoinFlagged(std::set<int64_t> mine) {
  auto all = ranks().AllGather(absl::StrJoin(mine, ","));
  if (!all.ok()) return all.status();
  for (const std::string& part : *all) {
    for (absl::string_view index : absl::StrSplit(part, ',', absl::SkipEmpty())) {
      int64_t i = 0;
      if (!absl::SimpleAtoi(index, &i) || i < 0 ||
          i >= static_cast<int64_t>(buffers_->layout().numels().size())) {
        return absl::InternalError(absl::StrCat("a rank sent parameter index '", index, "'"));
      }
      mine.insert(i);
    }
  }
  return mine;
}

std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)>
ShardedSync::all_gather() {
  return [this](const std::string& bytes) { return ranks().AllGather(bytes); };
}

std::string ShardedSync::DescribeExchange() const {
  return absl::StrCat("reduce-scattered in ", buffers_->layout().buckets().size(),
                      " bucket(s)");
}

std::string ShardedSync::DescribeAfter() const {
  return absl::StrCat("; ZeRO-1: this rank keeps the master weights, optimizer state and "
                      "averaged gradient of 1/", collectives_->world_size(),
                      " of the parameters' elements (", buffers_->layout().share(),
                      "), and the ranks all-gather the working weights after each update");
}

}  // namespace mnt::trainer

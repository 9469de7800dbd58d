#include "trainer/parallel/data_parallel.h"

#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

absl::Status FromPlugin(const sdk::Status& status, const char* what) {
  absl::Status s = sdk::ToAbsl(status);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("data parallel: ", what, ": ", s.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Create(
    HostComm* host, const sdk::BackendClient& client) {
  sdk::CollectivesClient collectives;
  if (sdk::Status found = sdk::CollectivesClient::Find(client.plugin(), client.backend(),
                                                       &collectives);
      !found.ok()) {
    if (found.code() == MNT_ERROR_NOT_FOUND) {
      return absl::FailedPreconditionError(absl::StrCat(
          "data parallel: the ", client.plugin()->name,
          " backend offers no collectives extension (mnt_collectives.h); run one rank, or "
          "--data_parallel=off to train each rank alone"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("data parallel: the ", client.plugin()->name,
                     " backend's collectives extension is unusable: ", found.message()));
  }
  std::unique_ptr<DataParallel> dp(new DataParallel(host, collectives));
  // Rank 0's backend makes the id; HostComm carries it to every rank.
  std::string id;
  if (host->rank() == 0) {
    if (auto s = FromPlugin(collectives.GetUniqueId(&id), "Collectives_GetUniqueId"); !s.ok()) {
      return s;
    }
  }
  if (auto s = host->Broadcast(&id); !s.ok()) return s;
  if (auto s = FromPlugin(sdk::Communicator::Create(collectives, host->rank(),
                                                    host->world_size(), id, &dp->comm_),
                          "Communicator_Create");
      !s.ok()) {
    return s;
  }
  return dp;
}

// The communicator goes with comm_ (before the backend goes); works not
// joined (a step that failed midway) go with it.
DataParallel::~DataParallel() = default;

absl::Status DataParallel::Run(MNT_CollectiveOp op, MNT_ReduceOp reduce, const MNT_Tensor& in,
                               const MNT_Tensor& out, int root) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = FromPlugin(comm_->Run(op, reduce, root, &in, &out), "Collectives_Run");
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++collective_calls_;
  return s;
}

bool DataParallel::starts_collectives() const { return collectives_.starts(); }

absl::Status DataParallel::Start(MNT_CollectiveOp op, MNT_ReduceOp reduce,
                                 const MNT_Tensor& in, const MNT_Tensor& out) {
  if (!starts_collectives()) return Run(op, reduce, in, out);
  const auto start = std::chrono::steady_clock::now();
  sdk::CollectiveWork work;
  absl::Status s = FromPlugin(comm_->Start(op, reduce, /*root=*/0, &in, &out, &work),
                              "Collectives_Start");
  if (s.ok()) started_.push_back(std::move(work));
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++collective_calls_;
  return s;
}

absl::Status DataParallel::Join() {
  const auto start = std::chrono::steady_clock::now();
  absl::Status first = absl::OkStatus();
  // Every work is consumed, even after an error.
  for (sdk::CollectiveWork& work : started_) {
    absl::Status s = FromPlugin(comm_->Wait(&work), "Collectives_Wait");
    if (first.ok()) first = s;
  }
  started_.clear();
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return first;
}
absl::Status DataParallel::StartAverage(const MNT_Tensor& t) {
  return Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, t, t);
}

absl::Status DataParallel::StartAverageScattered(const MNT_Tensor& all,
                                                 const MNT_Tensor& mine) {
  return Start(MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_AVG, all, mine);
}

absl::Status DataParallel::AverageInPlace(const MNT_Tensor& t) {
  return Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, t, t);
}

absl::Status DataParallel::MaxInPlace(const MNT_Tensor& t) {
  return Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_MAX, t, t);
}

absl::Status DataParallel::SumInPlace(const MNT_Tensor& t) {
  return Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, t, t);
}

absl::Status DataParallel::GatherInPlace(const MNT_Tensor& all) {
  const int64_t n = sdk::NumElements(all) / world_size();
  const MNT_Tensor mine = sdk::MakeTensor(
      static_cast<char*>(all.data) + rank() * n * static_cast<int64_t>(sdk::DTypeSize(all.dtype)),
      all.dtype, {n});
  return Run(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, mine, all);
}

}  // namespace mnt::trainer

#include "trainer/parallel/host_comm.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "third_party/mpi/mpi_api.h"

namespace mnt::trainer {
namespace {

const mpi::Api& Mpi() { return *mpi::Load(nullptr); }  // Create checked it loads

absl::Status Check(const char* call, int code) {
  if (code == MPI_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("data parallel: ", mpi::ErrorText(Mpi(), call, code)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostComm>> HostComm::Create(int expected_world,
                                                            int local_rank) {
  std::string why;
  const mpi::Api* api = mpi::Load(&why);
  if (api == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data parallel: ", why, "; or --data_parallel=off to train each rank alone"));
  }
  std::unique_ptr<HostComm> c(new HostComm());
  c->finalize_ = !mpi::IsInitialized(*api);
  c->local_rank_ = local_rank;
  if (std::string e = mpi::EnsureInitialized(*api); !e.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("data parallel: ", e));
  }
  if (auto s = Check("MPI_Comm_rank", api->MPI_Comm_rank(api->comm_world, &c->rank_)); !s.ok())
    return s;
  if (auto s = Check("MPI_Comm_size", api->MPI_Comm_size(api->comm_world, &c->world_)); !s.ok())
    return s;
  if (c->world_ != expected_world) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data parallel: the launcher says ", expected_world, " ranks but MPI sees ", c->world_,
        " (is this binary's MPI the launcher's? Debian's Open MPI mpirun is expected)"));
  }
  return c;
}

HostComm::~HostComm() {
  if (finalize_ && mpi::IsInitialized(Mpi())) Mpi().MPI_Finalize();
}

absl::Status HostComm::Broadcast(std::string* bytes) {
  uint64_t size = bytes->size();
  if (auto s = Check("MPI_Bcast", Mpi().MPI_Bcast(&size, sizeof(size), Mpi().byte, 0,
                                                  Mpi().comm_world));
      !s.ok())
    return s;
  bytes->resize(size);
  if (size == 0) return absl::OkStatus();
  return Check("MPI_Bcast", Mpi().MPI_Bcast(bytes->data(), static_cast<int>(size), Mpi().byte,
                                            0, Mpi().comm_world));
}

absl::StatusOr<std::vector<std::string>> HostComm::AllGather(const std::string& mine) {
  std::vector<int> sizes(world_);
  int my_size = static_cast<int>(mine.size());
  if (auto s = Check("MPI_Allgather",
                     Mpi().MPI_Allgather(&my_size, sizeof(int), Mpi().byte, sizes.data(),
                                         sizeof(int), Mpi().byte, Mpi().comm_world));
      !s.ok())
    return s;
  std::vector<int> displs(world_);
  int total = 0;
  for (int r = 0; r < world_; ++r) {
    displs[r] = total;
    total += sizes[r];
  }
  std::string all(total, '\0');
  if (auto s = Check("MPI_Allgatherv",
                     Mpi().MPI_Allgatherv(mine.data(), my_size, Mpi().byte, all.data(),
                                          sizes.data(), displs.data(), Mpi().byte,
                                          Mpi().comm_world));
      !s.ok())
    return s;
  std::vector<std::string> out(world_);
  for (int r = 0; r < world_; ++r) out[r] = all.substr(displs[r], sizes[r]);
  return out;
}

absl::StatusOr<std::vector<double>> HostComm::SumInRankOrder(const std::vector<double>& mine) {
  std::string bytes(mine.size() * sizeof(double), '\0');
  std::memcpy(bytes.data(), mine.data(), bytes.size());
  auto all = AllGather(bytes);
  if (!all.ok()) return all.status();
  std::vector<double> sum(mine.size(), 0.0);
  for (int r = 0; r < world_; ++r) {
    if ((*all)[r].size() != bytes.size()) {
      return absl::InternalError(absl::StrCat("data parallel: rank ", r, " sent ",
                                              (*all)[r].size() / sizeof(double),
                                              " values to sum, this rank ", mine.size()));
    }
    for (size_t i = 0; i < mine.size(); ++i) {
      double v;
      std::memcpy(&v, (*all)[r].data() + i * sizeof(double), sizeof(double));
      sum[i] = r == 0 ? v : sum[i] + v;
    }
  }
  return sum;
}

absl::StatusOr<bool> HostComm::Any(bool mine) {
  auto sum = SumInRankOrder({mine ? 1.0 : 0.0});
  if (!sum.ok()) return sum.status();
  return (*sum)[0] > 0;
}

void HostComm::AbortJob(int exit_code) {
  Mpi().MPI_Abort(Mpi().comm_world, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; in case it does
}

}  // namespace mnt::trainer

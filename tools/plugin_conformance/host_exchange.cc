#include "tools/plugin_conformance/host_exchange.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "third_party/mpi/mpi_api.h"

namespace mnt::conformance {
namespace {

// A non-negative int, or -1 for a missing or malformed value.
int ParseCount(const char* s) {
  if (s == nullptr || *s == '\0') return -1;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > (1 << 20)) return -1;
  return static_cast<int>(v);
}

}  // namespace

HostExchange::~HostExchange() {
  if (!finalize_) return;
  const mpi::Api* api = mpi::Load(nullptr);
  if (api != nullptr && mpi::IsInitialized(*api)) api->MPI_Finalize();
}

std::string HostExchange::Start(const std::function<const char*(const char*)>& getenv) {
  const int world = ParseCount(getenv("OMPI_COMM_WORLD_SIZE"));
  const int rank = ParseCount(getenv("OMPI_COMM_WORLD_RANK"));
  if (world < 1) return "";  // not under mpirun: world size 1
  if (rank < 0 || rank >= world) {
    return "OMPI_COMM_WORLD_RANK is missing or outside OMPI_COMM_WORLD_SIZE";
  }
  rank_ = rank;
  world_ = world;
  launcher_ = "mpirun";
  if (world == 1) return "";  // mpirun -np 1: nothing to exchange, no MPI
  std::string why;
  const mpi::Api* api = mpi::Load(&why);
  if (api == nullptr) return why;
  if (!mpi::IsInitialized(*api)) {
    if (std::string e = mpi::EnsureInitialized(*api); !e.empty()) return e;
    finalize_ = true;
  }
  int mpi_rank = -1, mpi_world = -1;
  api->MPI_Comm_rank(api->comm_world, &mpi_rank);
  api->MPI_Comm_size(api->comm_world, &mpi_world);
  if (mpi_rank != rank || mpi_world != world) {
    return "mpirun said rank " + std::to_string(rank) + " of " + std::to_string(world) +
           ", MPI_COMM_WORLD says " + std::to_string(mpi_rank) + " of " +
           std::to_string(mpi_world);
  }
  return "";
}

void HostExchange::Fatal(const std::string& why) {
  std::fprintf(stderr, "plugin_conformance: rank %d: host exchange failed: %s\n", rank_,
               why.c_str());
  std::fflush(stderr);
  const mpi::Api* api = mpi::Load(nullptr);
  if (api != nullptr && mpi::IsInitialized(*api)) api->MPI_Abort(api->comm_world, 3);
  std::_Exit(3);
}

void HostExchange::Broadcast(std::string* bytes) {
  if (world_ == 1) return;
  const mpi::Api* api = mpi::Load(nullptr);
  uint64_t size = bytes->size();
  int rc = api->MPI_Bcast(&size, sizeof(size), api->byte, 0, api->comm_world);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Bcast", rc));
  bytes->resize(size);
  if (size == 0) return;
  rc = api->MPI_Bcast(bytes->data(), static_cast<int>(size), api->byte, 0, api->comm_world);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Bcast", rc));
}

uint64_t HostExchange::BroadcastU64(uint64_t value) {
  std::string bytes(reinterpret_cast<const char*>(&value), sizeof(value));
  Broadcast(&bytes);
  std::memcpy(&value, bytes.data(), sizeof(value));
  return value;
}

std::vector<std::string> HostExchange::AllGather(const std::string& mine) {
  if (world_ == 1) return {mine};
  const mpi::Api* api = mpi::Load(nullptr);
  uint64_t size = mine.size();
  std::vector<uint64_t> sizes(world_);
  int rc = api->MPI_Allgather(&size, sizeof(size), api->byte, sizes.data(), sizeof(size),
                              api->byte, api->comm_world);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Allgather", rc));
  uint64_t longest = 1;
  for (uint64_t s : sizes) longest = s > longest ? s : longest;
  std::string padded(longest, '\0');
  std::memcpy(padded.data(), mine.data(), mine.size());
  std::string all(longest * world_, '\0');
  rc = api->MPI_Allgather(padded.data(), static_cast<int>(longest), api->byte, all.data(),
                          static_cast<int>(longest), api->byte, api->comm_world);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Allgather", rc));
  std::vector<std::string> out(world_);
  for (int r = 0; r < world_; ++r) out[r] = all.substr(r * longest, sizes[r]);
  return out;
}

}  // namespace mnt::conformance

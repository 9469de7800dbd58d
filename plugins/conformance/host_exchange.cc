#include "plugins/conformance/host_exchange.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

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

// The signal's broadcast, while a rank that stopped waiting for it has not
// completed it yet.
struct HostExchange::PendingSignal {
  MPI_Request request;
  char byte = 0;
};

HostExchange::HostExchange() = default;

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

namespace mnt::conformance {

void HostExchange::SendSignal() {
  if (world_ == 1) return;
  const mpi::Api* api = mpi::Load(nullptr);
  char byte = 1;
  MPI_Request request;
  int rc = api->MPI_Ibcast(&byte, 1, api->byte, 0, api->comm_world, &request);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Ibcast", rc));
  // The root's part only sends its byte: this returns at once, and it must
  // complete here, since nothing on rank 0 progresses it later.
  rc = api->MPI_Wait(&request, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Wait", rc));
}

bool HostExchange::AwaitSignal(double seconds) {
  if (world_ == 1) return true;
  const mpi::Api* api = mpi::Load(nullptr);
  auto pending = std::make_unique<PendingSignal>();
  int rc = api->MPI_Ibcast(&pending->byte, 1, api->byte, 0, api->comm_world, &pending->request);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Ibcast", rc));
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(seconds > 0 ? seconds : 0);
  for (;;) {
    int done = 0;
    rc = api->MPI_Test(&pending->request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Test", rc));
    if (done != 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) break;
    // Polling, not MPI_Wait: the deadline is the point. The pause leaves
    // the (possibly oversubscribed) cores to the ranks being waited for.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pending_ = std::move(pending);
  return false;
}

void HostExchange::EndSignal() {
  if (pending_ == nullptr) return;
  const mpi::Api* api = mpi::Load(nullptr);
  const int rc = api->MPI_Wait(&pending_->request, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) Fatal(mpi::ErrorText(*api, "MPI_Wait", rc));
  pending_.reset();
}

std::string HostExchange::MpiThreadLevel() const {
  if (world_ == 1) return "";
  const mpi::Api* api = mpi::Load(nullptr);
  int provided = -1;
  if (api == nullptr || api->MPI_Query_thread(&provided) != MPI_SUCCESS) return "unknown";
  switch (provided) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "level " + std::to_string(provided);
  }
}

}  // namespace mnt::conformance

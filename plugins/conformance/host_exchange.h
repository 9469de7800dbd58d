// Which rank of how many the conformance tool is, and the few host-side
// exchanges its multi-rank checks need (the collectives extension's unique
// id, every rank's verdict, a hash of every rank's output).
//
// Under Open MPI's mpirun the world comes from OMPI_COMM_WORLD_SIZE and
// OMPI_COMM_WORLD_RANK, read before MPI is touched; MPI itself is loaded at
// run time through third_party/mpi (nothing links it) and only when the
// world has more than one rank, so a one-process run (and the GPU device
// bundle, whose machine has no MPI) never needs it. The exchanges use
// MPI_COMM_WORLD; a backend's communicator is its own (the CPU backend's
// is a duplicate), so the two never mix. Every rank must make the same calls
// in the same order. A failing exchange cannot be recovered from (the other
// ranks wait in it): it prints why and ends the job (MPI_Abort).
#ifndef MANTISSA_PLUGINS_CONFORMANCE_HOST_EXCHANGE_H_
#define MANTISSA_PLUGINS_CONFORMANCE_HOST_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mnt::conformance {

class HostExchange {
 public:
  // World size 1, no MPI (a run outside mpirun; also what tests use).
  HostExchange();
  // Finalises MPI when Start initialised it.
  ~HostExchange();
  HostExchange(const HostExchange&) = delete;
  HostExchange& operator=(const HostExchange&) = delete;

  // Reads the launcher's environment (`getenv` injectable) and, for a world
  // of more than one rank, loads and initialises MPI and checks that it sees
  // the same world. "" on success, else why not.
  std::string Start(const std::function<const char*(const char*)>& getenv);

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  // "mpirun" when launched by it, "" for a one-process run.
  const std::string& launcher() const { return launcher_; }

  // Rank 0's `bytes` on every rank.
  void Broadcast(std::string* bytes);
  // Every rank's `mine`, in rank order.
  std::vector<std::string> AllGather(const std::string& mine);
  // Rank 0's value on every rank.
  uint64_t BroadcastU64(uint64_t value);

  // A one-way signal from rank 0 that the other ranks wait for with a
  // deadline, so a check can tell "rank 0 got past a call" from "rank 0 is
  // stuck in it until the others join" without hanging (the asynchrony
  // check of started collectives). Every rank takes part, in this order:
  //  * rank 0: SendSignal() once it got past the point (returns at once);
  //  * every other rank: AwaitSignal(seconds), true when the signal came
  //    within `seconds`; then, whatever it does next, EndSignal(), which
  //    waits for a signal that had not come (rank 0 sends it once it gets
  //    past the point), before any other exchange.
  // A non-blocking broadcast on MPI_COMM_WORLD: it needs MPI to allow a
  // plugin's own threads to call MPI meanwhile (MPI_THREAD_MULTIPLE).
  void SendSignal();
  bool AwaitSignal(double seconds);
  void EndSignal();

  // MPI's thread support ("MPI_THREAD_MULTIPLE", ...), "" without MPI.
  std::string MpiThreadLevel() const;

 private:
  [[noreturn]] void Fatal(const std::string& why);
  struct PendingSignal;
  std::unique_ptr<PendingSignal> pending_;
  int rank_ = 0;
  int world_ = 1;
  std::string launcher_;
  bool finalize_ = false;
};

}  // namespace mnt::conformance

#endif  // MANTISSA_PLUGINS_CONFORMANCE_HOST_EXCHANGE_H_

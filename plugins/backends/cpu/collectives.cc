#include "plugins/backends/cpu/collectives.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "plugins/backends/common/backend_plugin.h"
#include "plugins/backends/common/collective_call.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/collective_math.h"
#include "plugins/backends/cpu/collective_worker.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"
#include "third_party/mpi/mpi_api.h"

// A started collective: its ticket on the communicator's worker (0 when it
// ran before Start returned, with `status` its result).
// A handle is only ever used after its communicator's `outstanding` set
// named it, so a stale or foreign pointer is refused without reading it.
struct MNT_CollectiveWork {
  uint64_t ticket = 0;
  mnt::sdk::Status status;
};

struct MNT_Communicator {
  MPI_Comm comm = nullptr;
  int rank = 0;
  int world = 1;
  // Runs the collectives, started or run, in issue order; NULL when MPI
  // gives less than MPI_THREAD_MULTIPLE (the host thread then runs each
  // collective itself, and Start returns a finished work).
  std::unique_ptr<mnt::cpu::CollectiveWorker> worker;
  std::set<MNT_CollectiveWork*> outstanding;  // started, not yet waited for
  // The reductions' staging buffers, kept between collectives: a bucket's
  // worth of fresh pages per call would be faulted in (and zeroed) again on
  // every step. Used by whichever thread runs the collectives (one at a
  // time: the worker, or the host thread when there is none).
  std::vector<char> received, reduced;
};

namespace mnt::cpu {
namespace {

using sdk::Format;
using sdk::Status;

constexpr char kIdPrefix[] = "mantissa-cpu-mpi:";

Status Mpi(const mpi::Api& api, const char* call, int code) {
  if (code == MPI_SUCCESS) return Status::Ok();
  return sdk::Internal("cpu collectives: " + mpi::ErrorText(api, call, code));
}

// MPI, loaded and initialised (the host normally initialised it already).
Status ReadyMpi(const mpi::Api** out) {
  std::string why;
  const mpi::Api* api = mpi::Load(&why);
  if (api == nullptr) return sdk::FailedPrecondition("cpu collectives: " + why);
  if (std::string e = mpi::EnsureInitialized(*api); !e.empty()) {
    return sdk::FailedPrecondition("cpu collectives: " + e);
  }
  *out = api;
  return Status::Ok();
}

MNT_Error* GetUniqueId(MNT_Collectives_GetUniqueId_Args* args) {
  return sdk::Guard("Collectives_GetUniqueId", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_GetUniqueId_Args, args);
    // The MPI world already ties the ranks together; the id lets every rank
    // check that it joins the communicator rank 0 asked for.
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    const std::string id = Format("%s%d-%llx", kIdPrefix, static_cast<int>(getpid()),
                                  static_cast<unsigned long long>(now));
    std::memset(args->unique_id, 0, sizeof(args->unique_id));
    std::memcpy(args->unique_id, id.data(), id.size());
    args->unique_id_size = id.size();
    return Status::Ok();
  });
}

MNT_Error* CommunicatorCreate(MNT_Communicator_Create_Args* args) {
  return sdk::Guard("Communicator_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Communicator_Create_Args, args);
    args->communicator = nullptr;
    MNT_RETURN_IF_ERROR(backend::CheckCommunicatorArgs(args->rank, args->world_size,
                                                       args->unique_id, args->unique_id_size));
    if (args->unique_id_size < std::strlen(kIdPrefix) ||
        std::strncmp(args->unique_id, kIdPrefix, std::strlen(kIdPrefix)) != 0) {
      return sdk::InvalidArgument(
          "Communicator_Create: the unique id is not one Collectives_GetUniqueId of the cpu "
          "backend made");
    }
    const mpi::Api* api = nullptr;
    if (auto s = ReadyMpi(&api); !s.ok()) return s;
    int mpi_rank = 0, mpi_world = 0;
    if (auto s = Mpi(*api, "MPI_Comm_rank", api->MPI_Comm_rank(api->comm_world, &mpi_rank));
        !s.ok())
      return s;
    if (auto s = Mpi(*api, "MPI_Comm_size", api->MPI_Comm_size(api->comm_world, &mpi_world));
        !s.ok())
      return s;
    if (mpi_rank != args->rank || mpi_world != args->world_size) {
      return sdk::InvalidArgument(Format(
          "Communicator_Create: asked for rank %d of %d, but this process is MPI rank %d of "
          "%d (the cpu backend's ranks are MPI_COMM_WORLD's: launch with mpirun -np %d)",
          args->rank, args->world_size, mpi_rank, mpi_world, args->world_size));
    }
    MPI_Comm comm = nullptr;
    if (auto s = Mpi(*api, "MPI_Comm_dup", api->MPI_Comm_dup(api->comm_world, &comm)); !s.ok())
      return s;
    // Every rank must hold rank 0's id: gather them all and compare.
    char mine[MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES] = {};
    std::memcpy(mine, args->unique_id, args->unique_id_size);
    std::vector<char> all(static_cast<size_t>(mpi_world) * sizeof(mine));
    if (auto s = Mpi(*api, "MPI_Allgather",
                     api->MPI_Allgather(mine, sizeof(mine), api->byte, all.data(), sizeof(mine),
                                        api->byte, comm));
        !s.ok()) {
      api->MPI_Comm_free(&comm);
      return s;
    }
    for (int r = 1; r < mpi_world; ++r) {
      if (std::memcmp(all.data(), all.data() + r * sizeof(mine), sizeof(mine)) != 0) {
        api->MPI_Comm_free(&comm);
        return sdk::InvalidArgument(Format(
            "Communicator_Create: rank %d was given another unique id than rank 0's", r));
      }
    }
    auto c = std::make_unique<MNT_Communicator>();
    c->comm = comm;
    c->rank = mpi_rank;
    c->world = mpi_world;
    int provided = MPI_THREAD_SINGLE;
    if (api->MPI_Query_thread(&provided) == MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE) {
      c->worker = std::make_unique<CollectiveWorker>();
    }
    args->communicator = c.release();
    return Status::Ok();
  });
}

MNT_Error* CommunicatorDestroy(MNT_Communicator_Destroy_Args* args) {
  return sdk::Guard("Communicator_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Communicator_Destroy_Args, args);
    MNT_Communicator* c = args->communicator;
    if (c == nullptr) return Status::Ok();
    // Finishes every queued collective (the other ranks are in them too).
    c->worker.reset();
    for (MNT_CollectiveWork* w : c->outstanding) delete w;
    const mpi::Api* api = mpi::Load(nullptr);
    // After MPI_Finalize a communicator is gone with MPI itself.
    if (api != nullptr && mpi::IsInitialized(*api)) api->MPI_Comm_free(&c->comm);
    delete c;
    return Status::Ok();
  });
}

// MPI counts are ints: a chunk past 2 GiB is refused rather than cut.
Status FitsInt(const char* op, int64_t bytes) {
  if (bytes > INT_MAX) {
    return sdk::InvalidArgument(Format(
        "%s: %lld bytes per rank exceed the cpu backend's MPI limit of %d", op,
        static_cast<long long>(bytes), INT_MAX));
  }
  return Status::Ok();
}

// One collective, checked, with what running it needs. The tensors' data
// and sizes are copied out of the Args: a started collective outlives them.
struct Plan {
  MNT_CollectiveOp op = MNT_COLLECTIVE_INVALID;
  MNT_ReduceOp reduce = MNT_REDUCE_OP_INVALID;
  int root = 0;
  MNT_DType dtype = MNT_DTYPE_INVALID;
  int64_t esize = 0;
  const char* input = nullptr;  // NULL: a broadcast's non-root, which reads none
  char* output = nullptr;
  int64_t in_n = 0, out_n = 0;
};

// The checks every rank makes alike before anything moves: the contract
// every backend shares, then MPI's int counts.
template <typename Args>
Status PlanCollective(const char* call, const Args& args, Plan* plan) {
  MNT_RETURN_IF_ERROR(backend::CheckCommunicatorGiven(call, args.communicator));
  const MNT_Communicator& c = *args.communicator;
  backend::CollectiveCall checked;
  MNT_RETURN_IF_ERROR(backend::CheckCollectiveCall(call, args, c.rank, c.world, &checked));
  const int64_t esize = static_cast<int64_t>(checked.element_bytes);
  const int64_t in_n = checked.input.elements, out_n = checked.output.elements;
  // Every count and displacement is at most (n + w) elements.
  int64_t span = 0;
  if (__builtin_add_overflow(std::max(in_n, out_n), int64_t{c.world}, &span) ||
      __builtin_mul_overflow(span, esize, &span)) {
    span = INT64_MAX;
  }
  MNT_RETURN_IF_ERROR(FitsInt(checked.name, span));
  plan->op = checked.op;
  plan->reduce = checked.reduce;
  plan->root = checked.root;
  plan->dtype = checked.dtype;
  plan->esize = esize;
  plan->input = static_cast<const char*>(checked.input.data);
  plan->output = static_cast<char*>(checked.output.data);
  plan->in_n = in_n;
  plan->out_n = out_n;
  return Status::Ok();
}

// Completes a non-blocking MPI call. On the host thread: MPI_Wait, as a
// blocking call would. On the worker (`polite`): MPI_Test with sleeps that
// grow to 200 us, because Open MPI's waits spin, and a spinning worker would
// take a core from the ranks' compute (2 ranks on 2 cores leave none spare).
Status Finish(const mpi::Api& api, const char* call, MPI_Request* request, bool polite) {
  if (!polite) return Mpi(api, call, api.MPI_Wait(request, MPI_STATUS_IGNORE));
  int64_t pause_us = 5;
  for (;;) {
    int done = 0;
    if (auto s = Mpi(api, call, api.MPI_Test(request, &done, MPI_STATUS_IGNORE)); !s.ok()) {
      return s;
    }
    if (done != 0) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    pause_us = std::min<int64_t>(pause_us * 2, 200);
  }
}

// Every rank's copy of this rank's chunk [lo, hi) of `input` (n elements
// split by ChunkBegin), then the rank-order reduction into the first
// *reduced_bytes bytes of c.reduced.
Status ExchangeAndReduce(const mpi::Api& api, MNT_Communicator& c, const Plan& p, int64_t n,
                         bool polite, int64_t* reduced_bytes) {
  const int w = c.world;
  const int64_t esize = p.esize;
  std::vector<int> send_counts(w), send_displs(w), recv_counts(w), recv_displs(w);
  const int64_t lo = ChunkBegin(n, w, c.rank), hi = ChunkBegin(n, w, c.rank + 1);
  const int64_t mine = (hi - lo) * esize;
  for (int r = 0; r < w; ++r) {
    const int64_t b = ChunkBegin(n, w, r), e = ChunkBegin(n, w, r + 1);
    send_counts[r] = static_cast<int>((e - b) * esize);
    send_displs[r] = static_cast<int>(b * esize);
    recv_counts[r] = static_cast<int>(mine);
    recv_displs[r] = static_cast<int>(r * mine);
  }
  std::vector<char>& received = c.received;
  if (received.size() < static_cast<size_t>(mine) * w) received.resize(static_cast<size_t>(mine) * w);
  MPI_Request request = nullptr;
  if (auto s = Mpi(api, "MPI_Ialltoallv",
                   api.MPI_Ialltoallv(p.input, send_counts.data(), send_displs.data(), api.byte,
                                      received.data(), recv_counts.data(), recv_displs.data(),
                                      api.byte, c.comm, &request));
      !s.ok())
    return s;
  if (auto s = Finish(api, "MPI_Ialltoallv", &request, polite); !s.ok()) return s;
  std::vector<const void*> chunks(w);
  for (int r = 0; r < w; ++r) chunks[r] = received.data() + r * mine;
  if (c.reduced.size() < static_cast<size_t>(mine)) c.reduced.resize(static_cast<size_t>(mine));
  ReduceInRankOrder(chunks.data(), w, hi - lo, p.dtype, p.reduce, c.reduced.data());
  *reduced_bytes = mine;
  return Status::Ok();
}

// Runs a planned collective to completion (on the worker, or on the host
// thread when there is none).
Status Execute(MNT_Communicator& c, const Plan& p, bool polite) {
  const mpi::Api* api = nullptr;
  if (auto s = ReadyMpi(&api); !s.ok()) return s;
  const int w = c.world;
  const int64_t esize = p.esize;
  MPI_Request request = nullptr;
  switch (p.op) {
    case MNT_COLLECTIVE_ALL_REDUCE: {
      int64_t reduced = 0;
      if (auto s = ExchangeAndReduce(*api, c, p, p.out_n, polite, &reduced); !s.ok()) return s;
      std::vector<int> counts(w), displs(w);
      for (int r = 0; r < w; ++r) {
        counts[r] = static_cast<int>(
            (ChunkBegin(p.out_n, w, r + 1) - ChunkBegin(p.out_n, w, r)) * esize);
        displs[r] = static_cast<int>(ChunkBegin(p.out_n, w, r) * esize);
      }
      if (auto s = Mpi(*api, "MPI_Iallgatherv",
                       api->MPI_Iallgatherv(c.reduced.data(), static_cast<int>(reduced),
                                            api->byte, p.output, counts.data(), displs.data(),
                                            api->byte, c.comm, &request));
          !s.ok())
        return s;
      return Finish(*api, "MPI_Iallgatherv", &request, polite);
    }
    case MNT_COLLECTIVE_REDUCE_SCATTER: {
      // Equal chunks: ChunkBegin(W*n, W, r) = r*n.
      int64_t reduced = 0;
      if (auto s = ExchangeAndReduce(*api, c, p, p.in_n, polite, &reduced); !s.ok()) return s;
      std::memcpy(p.output, c.reduced.data(), static_cast<size_t>(reduced));
      return Status::Ok();
    }
    case MNT_COLLECTIVE_ALL_GATHER: {
      const int64_t bytes = p.in_n * esize;
      const void* send = p.input;
      if (send == p.output + c.rank * bytes) send = MPI_IN_PLACE;  // in-place gather
      if (auto s = Mpi(*api, "MPI_Iallgather",
                       api->MPI_Iallgather(send, static_cast<int>(bytes), api->byte, p.output,
                                           static_cast<int>(bytes), api->byte, c.comm,
                                           &request));
          !s.ok())
        return s;
      return Finish(*api, "MPI_Iallgather", &request, polite);
    }
    default: {  // BROADCAST
      const int64_t bytes = p.out_n * esize;
      if (c.rank == p.root && p.input != p.output) std::memmove(p.output, p.input, bytes);
      if (auto s = Mpi(*api, "MPI_Ibcast",
                       api->MPI_Ibcast(p.output, static_cast<int>(bytes), api->byte, p.root,
                                       c.comm, &request));
          !s.ok())
        return s;
      return Finish(*api, "MPI_Ibcast", &request, polite);
    }
  }
}

// Queues the collective on the communicator's worker (after every one
// issued before it); 0 when there is no worker and it has run already,
// with its result in *ran. `started`: the host computes meanwhile, so the
// worker must not spin (for a run one the host only waits).
uint64_t Issue(MNT_Communicator* c, const Plan& plan, bool started, Status* ran) {
  if (c->worker == nullptr) {
    *ran = Execute(*c, plan, /*polite=*/false);
    return 0;
  }
  MNT_Communicator* comm = c;
  return c->worker->Submit(
      [comm, plan, started] { return Execute(*comm, plan, /*polite=*/started); });
}

// A marked step's deferred ops (record_steps=on) are issued before a
// collective, so it reads what they wrote: a collective is not an op the
// step can record, and the rest of such a step runs as issued.
Status IssueDeferredOps(const char* call, MNT_Backend* backend) {
  CpuBackend* device = nullptr;
  return backend::BackendPlugin<CpuBackend>::ResolveForExtension(call, backend, &device);
}

MNT_Error* CollectivesRun(MNT_Collectives_Run_Args* args) {
  return sdk::Guard("Collectives_Run", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Run_Args, args);
    Plan plan;
    MNT_RETURN_IF_ERROR(PlanCollective("Collectives_Run", *args, &plan));
    MNT_RETURN_IF_ERROR(IssueDeferredOps("Collectives_Run", args->backend));
    // Synchronous, as every CPU op: behind the started ones, then waited.
    Status ran;
    const uint64_t ticket = Issue(args->communicator, plan, /*started=*/false, &ran);
    return ticket == 0 ? ran : args->communicator->worker->Wait(ticket);
  });
}

MNT_Error* CollectivesStart(MNT_Collectives_Start_Args* args) {
  return sdk::Guard("Collectives_Start", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Start_Args, args);
    args->work = nullptr;
    Plan plan;
    MNT_RETURN_IF_ERROR(PlanCollective("Collectives_Start", *args, &plan));
    MNT_RETURN_IF_ERROR(IssueDeferredOps("Collectives_Start", args->backend));
    auto work = std::make_unique<MNT_CollectiveWork>();
    work->ticket = Issue(args->communicator, plan, /*started=*/true, &work->status);
    args->communicator->outstanding.insert(work.get());
    args->work = work.release();
    return Status::Ok();
  });
}

MNT_Error* CollectivesWait(MNT_Collectives_Wait_Args* args) {
  return sdk::Guard("Collectives_Wait", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Wait_Args, args);
    MNT_Communicator* c = args->communicator;
    MNT_CollectiveWork* w = args->work;
    MNT_RETURN_IF_ERROR(backend::CheckCommunicatorGiven("Collectives_Wait", c));
    MNT_RETURN_IF_ERROR(backend::CheckWorkGiven(w));
    if (c->outstanding.count(w) == 0) {
      return sdk::InvalidArgument(
          "Collectives_Wait: work is not an outstanding started collective of this "
          "communicator (waited for twice, or started on another)");
    }
    c->outstanding.erase(w);
    std::unique_ptr<MNT_CollectiveWork> owned(w);
    return owned->ticket == 0 ? owned->status : c->worker->Wait(owned->ticket);
  });
}

}  // namespace

MNT_Collectives_Extension* CpuCollectivesExtension() {
  static MNT_Collectives_Extension ext =
      sdk::MakeCollectivesExtension(&GetUniqueId, &CommunicatorCreate, &CommunicatorDestroy,
                                    &CollectivesRun, &CollectivesStart, &CollectivesWait);
  return &ext;
}

}  // namespace mnt::cpu

#include "plugins/backends/cuda/collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugins/backends/common/collective_call.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/collectives_plan.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/nccl_api.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"

struct MNT_CollectiveWork;

// What an MNT_Communicator handle of this plugin points to.
struct MNT_Communicator {
  static constexpr uint64_t kMagic = 0x6d6e745f6e63636cull;  // "mnt_nccl"
  // Events kept for reuse by later Starts (a handful covers the buckets a
  // trainer has in flight); reserved at Create, so that returning one to
  // the pool never allocates.
  static constexpr size_t kMaxSpareEvents = 64;
  uint64_t magic = kMagic;
  ncclComm_t comm = nullptr;
  const mnt::cuda::nccl::Api* api = nullptr;
  MNT_Backend* backend = nullptr;  // the instance it was made with, and is used with
  int device = 0;
  int32_t rank = 0;
  int32_t world = 1;
  // Every collective of the communicator, run or started, is issued here,
  // so that they execute in the order they were issued (NCCL needs one
  // order per communicator, the same on every rank).
  cudaStream_t nccl_stream = nullptr;
  // Recorded on the backend's stream before each collective, and waited
  // for on nccl_stream: the collective reads what the ops before it wrote.
  // One event serves every call: a stream wait takes the event's latest
  // record at the time of the call.
  cudaEvent_t ready = nullptr;
  // Recorded after Run's collective and waited for at once on the
  // backend's stream, so one event serves every Run as well.
  cudaEvent_t run_done = nullptr;
  // Events of waited-for works, for later Starts. The works themselves,
  // until waited for, are in the process's WorkRegistry (Works()).
  std::vector<cudaEvent_t> spare_events;
};

// What an MNT_CollectiveWork handle of this plugin points to: one started
// collective, from Collectives_Start to Collectives_Wait (or the
// communicator's destruction). Handles are looked up in Works() before
// they are dereferenced; the magic then checks the memory behind one.
struct MNT_CollectiveWork {
  static constexpr uint64_t kMagic = 0x6d6e745f776f726bull;  // "mnt_work"
  uint64_t magic = kMagic;
  MNT_Communicator* communicator = nullptr;  // the one it was started on
  cudaEvent_t done = nullptr;  // recorded on nccl_stream after the collective
};

namespace mnt::cuda {
namespace {

using sdk::Format;
using sdk::Status;
using Plugin = backend::BackendPlugin<CudaBackend>;

static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes,
              "collectives_plan.h's kNcclUniqueIdBytes must be sizeof(ncclUniqueId)");

// NCCL, loaded; else FAILED_PRECONDITION with the one reason.
Status ReadyNccl(const char* call, const nccl::Api** out) {
  std::string why;
  const nccl::Api* api = nccl::Load(&why);
  if (api == nullptr) {
    return sdk::FailedPrecondition(Format(
        "%s: cuda collectives: %s (libnccl.so.2 is loaded at run time; "
        "$MANTISSA_NCCL_LIBRARY may name it)",
        call, why.c_str()));
  }
  *out = api;
  return Status::Ok();
}

Status Nccl(const nccl::Api& api, const std::string& call, ncclResult_t r,
            ncclComm_t comm = nullptr) {
  if (r == ncclSuccess) return Status::Ok();
  const MNT_ErrorCode code = r == ncclInvalidArgument || r == ncclInvalidUsage
                                 ? MNT_ERROR_INVALID_ARGUMENT
                             : r == ncclRemoteError ? MNT_ERROR_UNAVAILABLE
                                                    : MNT_ERROR_INTERNAL;
  return Status(code, "cuda collectives: " + nccl::ErrorText(api, call.c_str(), r, comm));
}

// A live communicator of this plugin (made with any backend).
Status CheckCommunicatorHandle(const char* call, const MNT_Communicator* c) {
  MNT_RETURN_IF_ERROR(backend::CheckCommunicatorGiven(call, c));
  if (c->magic != MNT_Communicator::kMagic) {
    return sdk::InvalidArgument(Format(
        "%s: communicator is not a live communicator of the cuda backend", call));
  }
  return Status::Ok();
}

// The communicator is used with the backend instance it was made with.
Status CheckBackend(const char* call, const MNT_Communicator& c, MNT_Backend* backend) {
  if (c.backend != backend) {
    return sdk::InvalidArgument(Format(
        "%s: the communicator belongs to another backend instance (rank %d's, on cuda:%d)",
        call, c.rank, c.device));
  }
  return Status::Ok();
}

// A live communicator of this plugin, made with `backend`.
Status CheckCommunicator(const char* call, const MNT_Communicator* c, MNT_Backend* backend) {
  MNT_RETURN_IF_ERROR(CheckCommunicatorHandle(call, c));
  return CheckBackend(call, *c, backend);
}

// An asynchronous error NCCL recorded on the communicator (a failed
// collective, a rank that went away).
Status AsyncError(const char* call, const MNT_Communicator& c) {
  ncclResult_t async = ncclSuccess;
  MNT_RETURN_IF_ERROR(Nccl(*c.api, std::string(call) + ": ncclCommGetAsyncError",
                           c.api->ncclCommGetAsyncError(c.comm, &async), c.comm));
  return Nccl(*c.api, std::string(call) + ": an earlier collective on this communicator failed",
              async, c.comm);
}

// The started collectives not yet waited for, of every communicator.
// Never destroyed: a communicator destroyed during exit still finds it.
WorkRegistry<MNT_CollectiveWork, MNT_Communicator>& Works() {
  static auto* works = new WorkRegistry<MNT_CollectiveWork, MNT_Communicator>();
  return *works;
}

// `next` joins `*status`: the first failure stays the status and later ones
// are appended to its line, so that a cleanup which goes on past a failure
// (it must release everything) still reports every step that failed.
void Also(Status* status, const Status& next) {
  if (next.ok()) return;
  if (status->ok()) {
    *status = next;
  } else {
    *status = Status(status->code(), status->message() + "; then " + next.message());
  }
}

// An event for a started collective: a spare one, else a new one (timing
// off: it only orders streams, and timing events cost more to record).
Status AcquireEvent(const char* call, MNT_Communicator* c, cudaEvent_t* out) {
  if (!c->spare_events.empty()) {
    *out = c->spare_events.back();
    c->spare_events.pop_back();
    return Status::Ok();
  }
  MNT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(out, cudaEventDisableTiming),
                           Format("%s: cudaEventCreateWithFlags(cudaEventDisableTiming)", call));
  return Status::Ok();
}

// Gives a work's event back: kept for the next Start while the pool has
// room (reserved at Create, so this never allocates), destroyed otherwise.
// Safe whether or not the event was recorded or has completed: a stream
// that waits on it took its record at the time it was told to wait, and a
// later record does not change that wait.
Status ReleaseEvent(const char* call, MNT_Communicator* c, cudaEvent_t e) {
  if (e == nullptr) return Status::Ok();
  if (c->spare_events.size() < MNT_Communicator::kMaxSpareEvents) {
    c->spare_events.push_back(e);
    return Status::Ok();
  }
  return CudaStatus(cudaEventDestroy(e), Format("%s: cudaEventDestroy", call));
}

// Frees what the communicator holds besides the NCCL communicator: the
// works never waited for (their events and structs), the spare events,
// the ready and run_done events and the NCCL stream. Goes on past a
// failure so that everything is released; returns every failure on one
// line. The caller has synchronised the NCCL stream, or gave up on it.
Status ReleaseCommunicatorResources(const char* call, MNT_Communicator* c) {
  Status status;
  const auto destroy = [&](cudaEvent_t* e, const char* which) {
    if (*e == nullptr) return;
    Also(&status,
         CudaStatus(cudaEventDestroy(*e), Format("%s: cudaEventDestroy(%s)", call, which)));
    *e = nullptr;
  };
  for (MNT_CollectiveWork* w : Works().TakeAll(c)) {
    destroy(&w->done, "a started collective's event");
    w->magic = 0;
    delete w;
  }
  for (cudaEvent_t& e : c->spare_events) destroy(&e, "a spare event");
  c->spare_events.clear();
  destroy(&c->ready, "the backend stream's event");
  destroy(&c->run_done, "Collectives_Run's event");
  if (c->nccl_stream != nullptr) {
    Also(&status, CudaStatus(cudaStreamDestroy(c->nccl_stream),
                             Format("%s: cudaStreamDestroy(the NCCL stream)", call)));
    c->nccl_stream = nullptr;
  }
  return status;
}

MNT_Error* GetUniqueId(MNT_Collectives_GetUniqueId_Args* args) {
  return sdk::Guard("Collectives_GetUniqueId", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_GetUniqueId_Args, args);
    args->unique_id_size = 0;
    CudaBackend* b = nullptr;
    MNT_RETURN_IF_ERROR(
        Plugin::ResolveForExtension("Collectives_GetUniqueId", args->backend, &b));
    const nccl::Api* api = nullptr;
    MNT_RETURN_IF_ERROR(ReadyNccl("Collectives_GetUniqueId", &api));
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    MNT_RETURN_IF_ERROR(
        Nccl(*api, "Collectives_GetUniqueId: ncclGetUniqueId", api->ncclGetUniqueId(&id)));
    std::memset(args->unique_id, 0, sizeof(args->unique_id));
    std::memcpy(args->unique_id, &id, sizeof(id));
    args->unique_id_size = sizeof(id);
    return Status::Ok();
  });
}

MNT_Error* CommunicatorCreate(MNT_Communicator_Create_Args* args) {
  return sdk::Guard("Communicator_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Communicator_Create_Args, args);
    args->communicator = nullptr;
    MNT_RETURN_IF_ERROR(CheckCommunicatorArgs(args->rank, args->world_size, args->unique_id,
                                              args->unique_id_size));
    CudaBackend* b = nullptr;
    MNT_RETURN_IF_ERROR(Plugin::ResolveForExtension("Communicator_Create", args->backend, &b));
    const nccl::Api* api = nullptr;
    MNT_RETURN_IF_ERROR(ReadyNccl("Communicator_Create", &api));
    ncclUniqueId id;
    std::memcpy(&id, args->unique_id, sizeof(id));
    // Allocated first: nothing can throw once NCCL holds a communicator.
    auto c = std::make_unique<MNT_Communicator>();
    c->spare_events.reserve(MNT_Communicator::kMaxSpareEvents);
    // The stream and events before the communicator, so that a failure
    // here leaves nothing for NCCL to tear down. The backend's device is
    // current (ResolveForExtension): they belong to it, as the
    // communicator does. Non-blocking: the NCCL stream must not be
    // serialised with work on the legacy default stream.
    Status made = CudaStatus(cudaStreamCreateWithFlags(&c->nccl_stream, cudaStreamNonBlocking),
                             "Communicator_Create: cudaStreamCreateWithFlags(the NCCL stream, "
                             "cudaStreamNonBlocking)");
    if (made.ok()) {
      made = CudaStatus(cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming),
                        "Communicator_Create: cudaEventCreateWithFlags(the backend stream's "
                        "event)");
    }
    if (made.ok()) {
      made = CudaStatus(cudaEventCreateWithFlags(&c->run_done, cudaEventDisableTiming),
                        "Communicator_Create: cudaEventCreateWithFlags(Collectives_Run's event)");
    }
    // NCCL ties the communicator to the current device. Blocks until every
    // rank has joined.
    if (made.ok()) {
      made = Nccl(*api,
                  Format("Communicator_Create: ncclCommInitRank(rank %d of %d on cuda:%d)",
                         args->rank, args->world_size, b->device),
                  api->ncclCommInitRank(&c->comm, args->world_size, id, args->rank));
    }
    if (!made.ok()) {
      Also(&made, ReleaseCommunicatorResources("Communicator_Create", c.get()));
      return made;
    }
    c->api = api;
    c->backend = args->backend;
    c->device = b->device;
    c->rank = args->rank;
    c->world = args->world_size;
    args->communicator = c.release();
    return Status::Ok();
  });
}

MNT_Error* CommunicatorDestroy(MNT_Communicator_Destroy_Args* args) {
  return sdk::Guard("Communicator_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Communicator_Destroy_Args, args);
    MNT_Communicator* c = args->communicator;
    if (c == nullptr) return Status::Ok();
    MNT_RETURN_IF_ERROR(CheckCommunicator("Communicator_Destroy", c, args->backend));
    // From here on the handle is gone whatever happens: destroyed, or
    // aborted when anything before ncclCommDestroy failed.
    CudaBackend* b = nullptr;
    Status status = Plugin::ResolveForExtension("Communicator_Destroy", args->backend, &b);
    // The communicator's outstanding work: every collective, run or
    // started (waited for or not), is on the NCCL stream; then the
    // backend's own stream, as before there was an NCCL stream (its
    // pending ops, some of which may wait on a collective).
    if (status.ok()) {
      status = CudaStatus(cudaStreamSynchronize(c->nccl_stream),
                          "Communicator_Destroy: cudaStreamSynchronize(the NCCL stream)");
    }
    if (status.ok()) {
      status = CudaStatus(cudaStreamSynchronize(b->stream),
                          "Communicator_Destroy: cudaStreamSynchronize(the backend's stream)");
    }
    if (status.ok()) status = AsyncError("Communicator_Destroy", *c);
    const nccl::Api& api = *c->api;
    if (status.ok()) {
      status = Nccl(api, "Communicator_Destroy: ncclCommDestroy", api.ncclCommDestroy(c->comm));
    } else {
      // A failed backend, stream or communicator: ncclCommDestroy could
      // wait for peers that are gone.
      const ncclResult_t aborted = api.ncclCommAbort(c->comm);
      if (aborted != ncclSuccess) {
        status = Status(status.code(),
                        status.message() + "; then " +
                            nccl::ErrorText(api, "ncclCommAbort", aborted, nullptr));
      } else {
        status = Status(status.code(), status.message() + " (the communicator was aborted)");
      }
    }
    // NCCL is done with the stream now (destroyed or aborted); the works
    // never waited for go with it.
    Also(&status, ReleaseCommunicatorResources("Communicator_Destroy", c));
    c->magic = 0;
    delete c;
    return status;
  });
}

ncclDataType_t NcclType(WireType t) {
  switch (t) {
    case WireType::kF32: return ncclFloat32;
    case WireType::kF16: return ncclFloat16;
    case WireType::kBF16: return ncclBfloat16;
    default: return ncclInt8;
  }
}

ncclRedOp_t NcclOp(MNT_ReduceOp r) {
  switch (r) {
    case MNT_REDUCE_OP_AVG: return ncclAvg;
    case MNT_REDUCE_OP_MAX: return ncclMax;
    default: return ncclSum;
  }
}

Status Outside(const char* op, const char* which, const void* p, size_t n) {
  return sdk::InvalidArgument(Format(
      "%s: %s %p + %zu bytes is not inside memory allocated by this backend", op, which, p, n));
}

// One collective that passed every check, ready to issue.
struct Prepared {
  CollectivePlan plan;
  CudaBackend* backend = nullptr;
  const char* name = "";  // the op's, for messages
};

// Run's and Start's checks, in Run's order: the communicator (live, of
// this backend), the operands (PlanCollective), the backend (whose open
// step's deferred ops ResolveForExtension issues now, so that the
// collective is ordered after them), the memory, NCCL's support for the
// reduce op, and an earlier asynchronous failure of the communicator.
Status Prepare(const char* call, const MNT_Collectives_Run_Args& args, const MNT_Communicator* c,
               Prepared* out) {
  MNT_RETURN_IF_ERROR(CheckCommunicator(call, c, args.backend));
  CollectivePlan& plan = out->plan;
  MNT_RETURN_IF_ERROR(PlanCollective(args, c->rank, c->world, &plan, call));
  const char* name = sdk::CollectiveOpName(plan.op);
  out->name = name;
  CudaBackend* b = nullptr;
  MNT_RETURN_IF_ERROR(Plugin::ResolveForExtension(call, args.backend, &b));
  out->backend = b;
  if (plan.input_bytes > 0 && !b->allocator().Contains(plan.input, plan.input_bytes)) {
    return Outside(name, "input", plan.input, plan.input_bytes);
  }
  if (plan.output_bytes > 0 && !b->allocator().Contains(plan.output, plan.output_bytes)) {
    return Outside(name, "output", plan.output, plan.output_bytes);
  }
  const nccl::Api& api = *c->api;
  if (plan.reduce == MNT_REDUCE_OP_AVG && api.version < nccl::kAvgSinceVersion) {
    return sdk::FailedPrecondition(Format(
        "%s: AVG needs ncclAvg (NCCL 2.10 or later); %s is NCCL %s", name,
        api.file.c_str(), nccl::VersionString(api.version).c_str()));
  }
  return AsyncError(name, *c);
}

// The NCCL call of `p`, on the communicator's NCCL stream.
Status CallNccl(const MNT_Communicator& c, const Prepared& p) {
  const CollectivePlan& plan = p.plan;
  const nccl::Api& api = *c.api;
  const ncclDataType_t type = NcclType(plan.type);
  ncclResult_t r = ncclSuccess;
  const char* call = "";
  switch (plan.op) {
    case MNT_COLLECTIVE_ALL_REDUCE:
      call = "ncclAllReduce";
      r = api.ncclAllReduce(plan.send, plan.recv, plan.count, type, NcclOp(plan.reduce), c.comm,
                            c.nccl_stream);
      break;
    case MNT_COLLECTIVE_REDUCE_SCATTER:
      call = "ncclReduceScatter";
      r = api.ncclReduceScatter(plan.send, plan.recv, plan.count, type, NcclOp(plan.reduce),
                                c.comm, c.nccl_stream);
      break;
    case MNT_COLLECTIVE_ALL_GATHER:
      call = "ncclAllGather";
      r = api.ncclAllGather(plan.send, plan.recv, plan.count, type, c.comm, c.nccl_stream);
      break;
    default:
      call = "ncclBroadcast";
      r = api.ncclBroadcast(plan.send, plan.recv, plan.count, type, plan.root, c.comm,
                            c.nccl_stream);
      break;
  }
  if (r == ncclSuccess) return Status::Ok();
  return Nccl(api, Format("%s: %s(%zu x %s, rank %d of %d)", p.name, call, plan.count,
                          plan.type == WireType::kBytes ? "bytes"
                          : plan.type == WireType::kF32 ? "f32"
                          : plan.type == WireType::kF16 ? "f16"
                                                        : "bf16",
                          c.rank, c.world),
              r, c.comm);
}

// Issues `p` on the communicator's NCCL stream after every op issued on
// the backend's stream so far (the ready event), and records `done` on the
// NCCL stream after it. With nothing to move (count 0, alike on every
// rank) only `done` is recorded: there is nothing to order.
Status Issue(const MNT_Communicator& c, const Prepared& p, cudaEvent_t done) {
  if (p.plan.count > 0) {
    MNT_CUDA_RETURN_IF_ERROR(cudaEventRecord(c.ready, p.backend->stream),
                             Format("%s: cudaEventRecord(on the backend's stream)", p.name));
    MNT_CUDA_RETURN_IF_ERROR(
        cudaStreamWaitEvent(c.nccl_stream, c.ready, 0),
        Format("%s: cudaStreamWaitEvent(the NCCL stream waits for the backend's)", p.name));
    MNT_RETURN_IF_ERROR(CallNccl(c, p));
  }
  MNT_CUDA_RETURN_IF_ERROR(cudaEventRecord(done, c.nccl_stream),
                           Format("%s: cudaEventRecord(on the NCCL stream)", p.name));
  return Status::Ok();
}

MNT_Error* CollectivesRun(MNT_Collectives_Run_Args* args) {
  return sdk::Guard("Collectives_Run", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Run_Args, args);
    MNT_Communicator* c = args->communicator;
    Prepared p;
    MNT_RETURN_IF_ERROR(Prepare("Collectives_Run", *args, c, &p));
    if (p.plan.count == 0) return Status::Ok();  // the same on every rank
    MNT_RETURN_IF_ERROR(Issue(*c, p, c->run_done));
    // The backend's later ops wait for the collective, exactly as when Run
    // issued it on the backend's own stream.
    MNT_CUDA_RETURN_IF_ERROR(
        cudaStreamWaitEvent(p.backend->stream, c->run_done, 0),
        Format("%s: cudaStreamWaitEvent(the backend's stream waits for the NCCL stream)",
               p.name));
    return Status::Ok();
  });
}

MNT_Error* CollectivesStart(MNT_Collectives_Start_Args* args) {
  return sdk::Guard("Collectives_Start", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Start_Args, args);
    args->work = nullptr;
    MNT_Communicator* c = args->communicator;
    Prepared p;
    MNT_RETURN_IF_ERROR(Prepare("Collectives_Start", RunArgsOf(*args), c, &p));
    // Host memory first (it may throw), while nothing is issued yet.
    auto w = std::make_unique<MNT_CollectiveWork>();
    w->communicator = c;
    Works().Add(w.get(), c);
    Status s = AcquireEvent(p.name, c, &w->done);
    if (s.ok()) s = Issue(*c, p, w->done);
    if (!s.ok()) {
      Works().Take(w.get(), c);
      Also(&s, ReleaseEvent(p.name, c, w->done));
      return s;
    }
    args->work = w.release();
    return Status::Ok();
  });
}

// Makes the backend's stream wait for the collective of `w`, then checks
// the communicator for an asynchronous failure (of this collective or an
// earlier one, as far as NCCL has seen yet).
Status Join(MNT_Backend* backend, const MNT_Communicator& c, const MNT_CollectiveWork& w) {
  MNT_RETURN_IF_ERROR(CheckBackend("Collectives_Wait", c, backend));
  CudaBackend* b = nullptr;
  MNT_RETURN_IF_ERROR(Plugin::ResolveForExtension("Collectives_Wait", backend, &b));
  MNT_CUDA_RETURN_IF_ERROR(
      cudaStreamWaitEvent(b->stream, w.done, 0),
      "Collectives_Wait: cudaStreamWaitEvent(the backend's stream waits for the collective)");
  return AsyncError("Collectives_Wait", c);
}

MNT_Error* CollectivesWait(MNT_Collectives_Wait_Args* args) {
  return sdk::Guard("Collectives_Wait", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Wait_Args, args);
    MNT_Communicator* c = args->communicator;
    MNT_RETURN_IF_ERROR(CheckCommunicatorHandle("Collectives_Wait", c));
    MNT_RETURN_IF_ERROR(backend::CheckWorkGiven(args->work));
    // Found by address before it is dereferenced. Another communicator's
    // work is left alone (its Wait or its communicator's Destroy frees it).
    switch (Works().Take(args->work, c)) {
      case WorkRegistry<MNT_CollectiveWork, MNT_Communicator>::Taken::kYes:
        break;
      case WorkRegistry<MNT_CollectiveWork, MNT_Communicator>::Taken::kOtherOwner:
        return sdk::InvalidArgument(Format(
            "Collectives_Wait: the work was started on another communicator, not this one "
            "(rank %d of %d on cuda:%d)",
            c->rank, c->world, c->device));
      default:
        return sdk::InvalidArgument(
            "Collectives_Wait: work is not a started collective of the cuda backend still to "
            "be waited for (each work is waited for once)");
    }
    if (args->work->magic != MNT_CollectiveWork::kMagic || args->work->communicator != c) {
      // Registered, yet not what Start made: memory was overwritten.
      return sdk::Internal("Collectives_Wait: the work's memory was overwritten");
    }
    // Consumed from here, whatever the result (mnt_collectives.h); when
    // the join fails the backend's stream is not ordered after the
    // collective, which the error says.
    std::unique_ptr<MNT_CollectiveWork> w(args->work);
    Status status = Join(args->backend, *c, *w);
    if (!status.ok()) {
      status = Status(status.code(), status.message() + " (the work is consumed)");
    }
    Also(&status, ReleaseEvent("Collectives_Wait", c, w->done));
    w->done = nullptr;
    w->magic = 0;
    return status;
  });
}

}  // namespace

MNT_Collectives_Extension* CudaCollectivesExtension() {
  // Version 2: with Collectives_Start and Collectives_Wait.
  static MNT_Collectives_Extension ext =
      sdk::MakeCollectivesExtension(&GetUniqueId, &CommunicatorCreate, &CommunicatorDestroy,
                                    &CollectivesRun, &CollectivesStart, &CollectivesWait);
  return &ext;
}

}  // namespace mnt::cuda

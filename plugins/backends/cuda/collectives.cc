#include "plugins/backends/cuda/collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/collectives_plan.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/nccl_api.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"

// What an MNT_Communicator handle of this plugin points to.
struct MNT_Communicator {
  static constexpr uint64_t kMagic = 0x6d6e745f6e63636cull;  // "mnt_nccl"
  uint64_t magic = kMagic;
  ncclComm_t comm = nullptr;
  const mnt::cuda::nccl::Api* api = nullptr;
  MNT_Backend* backend = nullptr;  // the instance it was made with, and is used with
  int device = 0;
  int32_t rank = 0;
  int32_t world = 1;
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

// A live communicator of this plugin, made with `backend`.
Status CheckCommunicator(const char* call, const MNT_Communicator* c, MNT_Backend* backend) {
  if (c == nullptr) return sdk::InvalidArgument(Format("%s: communicator is NULL", call));
  if (c->magic != MNT_Communicator::kMagic) {
    return sdk::InvalidArgument(Format(
        "%s: communicator is not a live communicator of the cuda backend", call));
  }
  if (c->backend != backend) {
    return sdk::InvalidArgument(Format(
        "%s: the communicator belongs to another backend instance (rank %d's, on cuda:%d)",
        call, c->rank, c->device));
  }
  return Status::Ok();
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
    // The device is current (ResolveForExtension); NCCL ties the
    // communicator to it. Blocks until every rank has joined.
    MNT_RETURN_IF_ERROR(Nccl(*api,
                             Format("Communicator_Create: ncclCommInitRank(rank %d of %d on "
                                    "cuda:%d)",
                                    args->rank, args->world_size, b->device),
                             api->ncclCommInitRank(&c->comm, args->world_size, id, args->rank)));
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
    // The communicator's outstanding work is on the backend's stream.
    if (status.ok()) {
      status = CudaStatus(cudaStreamSynchronize(b->stream),
                          "Communicator_Destroy: cudaStreamSynchronize");
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

MNT_Error* CollectivesRun(MNT_Collectives_Run_Args* args) {
  return sdk::Guard("Collectives_Run", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Collectives_Run_Args, args);
    const MNT_Communicator* c = args->communicator;
    MNT_RETURN_IF_ERROR(CheckCommunicator("Collectives_Run", c, args->backend));
    CollectivePlan plan;
    MNT_RETURN_IF_ERROR(PlanCollective(*args, c->rank, c->world, &plan));
    const char* name = CollectiveOpName(plan.op);
    CudaBackend* b = nullptr;
    MNT_RETURN_IF_ERROR(Plugin::ResolveForExtension("Collectives_Run", args->backend, &b));
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
    MNT_RETURN_IF_ERROR(AsyncError(name, *c));
    if (plan.count == 0) return Status::Ok();  // the same on every rank
    const ncclDataType_t type = NcclType(plan.type);
    ncclResult_t r = ncclSuccess;
    const char* call = "";
    switch (plan.op) {
      case MNT_COLLECTIVE_ALL_REDUCE:
        call = "ncclAllReduce";
        r = api.ncclAllReduce(plan.send, plan.recv, plan.count, type, NcclOp(plan.reduce),
                              c->comm, b->stream);
        break;
      case MNT_COLLECTIVE_REDUCE_SCATTER:
        call = "ncclReduceScatter";
        r = api.ncclReduceScatter(plan.send, plan.recv, plan.count, type, NcclOp(plan.reduce),
                                  c->comm, b->stream);
        break;
      case MNT_COLLECTIVE_ALL_GATHER:
        call = "ncclAllGather";
        r = api.ncclAllGather(plan.send, plan.recv, plan.count, type, c->comm, b->stream);
        break;
      default:
        call = "ncclBroadcast";
        r = api.ncclBroadcast(plan.send, plan.recv, plan.count, type, plan.root, c->comm,
                              b->stream);
        break;
    }
    return Nccl(api, Format("%s: %s(%zu x %s, rank %d of %d)", name, call, plan.count,
                            plan.type == WireType::kBytes ? "bytes"
                            : plan.type == WireType::kF32 ? "f32"
                            : plan.type == WireType::kF16 ? "f16"
                                                          : "bf16",
                            c->rank, c->world),
                r, c->comm);
  });
}

}  // namespace

MNT_Collectives_Extension* CudaCollectivesExtension() {
  static MNT_Collectives_Extension ext = sdk::MakeCollectivesExtension(
      &GetUniqueId, &CommunicatorCreate, &CommunicatorDestroy, &CollectivesRun);
  return &ext;
}

}  // namespace mnt::cuda

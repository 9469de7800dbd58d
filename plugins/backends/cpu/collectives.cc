#include "plugins/backends/cpu/collectives.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "plugins/backends/cpu/collective_math.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"
#include "third_party/mpi/mpi_api.h"

struct MNT_Communicator {
  MPI_Comm comm = nullptr;
  int rank = 0;
  int world = 1;
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

// Exceptions must not cross the C boundary.
template <typename F>
MNT_Error* Guard(const char* call, F&& f) {
  try {
    return sdk::ToError(f());
  } catch (const std::exception& e) {
    return sdk::ToError(sdk::Internal(Format("%s: %s", call, e.what())));
  } catch (...) {
    return sdk::ToError(sdk::Internal(Format("%s: unknown exception", call)));
  }
}

MNT_Error* GetUniqueId(MNT_Collectives_GetUniqueId_Args* args) {
  return Guard("Collectives_GetUniqueId", [&]() -> Status {
    if (args == nullptr) return sdk::InvalidArgument("Collectives_GetUniqueId: args is NULL");
    if (auto s = sdk::CheckStructSize("MNT_Collectives_GetUniqueId_Args", MNT_Collectives_GetUniqueId_Args_STRUCT_SIZE, args->struct_size);
        !s.ok())
      return s;
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
  return Guard("Communicator_Create", [&]() -> Status {
    if (args == nullptr) return sdk::InvalidArgument("Communicator_Create: args is NULL");
    if (auto s = sdk::CheckStructSize("MNT_Communicator_Create_Args", MNT_Communicator_Create_Args_STRUCT_SIZE, args->struct_size);
        !s.ok())
      return s;
    args->communicator = nullptr;
    if (args->world_size < 1 || args->rank < 0 || args->rank >= args->world_size) {
      return sdk::InvalidArgument(Format("Communicator_Create: rank %d of world size %d",
                                         args->rank, args->world_size));
    }
    if (args->unique_id == nullptr || args->unique_id_size == 0 ||
        args->unique_id_size > MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES ||
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
    args->communicator = new MNT_Communicator{comm, mpi_rank, mpi_world};
    return Status::Ok();
  });
}

MNT_Error* CommunicatorDestroy(MNT_Communicator_Destroy_Args* args) {
  return Guard("Communicator_Destroy", [&]() -> Status {
    if (args == nullptr) return sdk::InvalidArgument("Communicator_Destroy: args is NULL");
    if (auto s = sdk::CheckStructSize("MNT_Communicator_Destroy_Args", MNT_Communicator_Destroy_Args_STRUCT_SIZE, args->struct_size);
        !s.ok())
      return s;
    MNT_Communicator* c = args->communicator;
    if (c == nullptr) return Status::Ok();
    const mpi::Api* api = mpi::Load(nullptr);
    // After MPI_Finalize a communicator is gone with MPI itself.
    if (api != nullptr && mpi::IsInitialized(*api)) api->MPI_Comm_free(&c->comm);
    delete c;
    return Status::Ok();
  });
}

int64_t Numel(const MNT_Tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.dims[i];
  return n;
}

const char* OpName(MNT_CollectiveOp op) {
  switch (op) {
    case MNT_COLLECTIVE_ALL_REDUCE: return "ALL_REDUCE";
    case MNT_COLLECTIVE_REDUCE_SCATTER: return "REDUCE_SCATTER";
    case MNT_COLLECTIVE_ALL_GATHER: return "ALL_GATHER";
    case MNT_COLLECTIVE_BROADCAST: return "BROADCAST";
    default: return "unknown collective";
  }
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

// Every rank's copy of this rank's chunk [lo, hi) of `input` (n elements
// split by ChunkBegin), then the rank-order reduction into `reduced`.
Status ExchangeAndReduce(const mpi::Api& api, const MNT_Communicator& c, const char* name,
                         const char* input, int64_t n, int64_t esize, MNT_DType dtype,
                         MNT_ReduceOp reduce, std::vector<char>* reduced) {
  const int w = c.world;
  std::vector<int> send_counts(w), send_displs(w), recv_counts(w), recv_displs(w);
  const int64_t lo = ChunkBegin(n, w, c.rank), hi = ChunkBegin(n, w, c.rank + 1);
  const int64_t mine = (hi - lo) * esize;
  if (auto s = FitsInt(name, mine * w); !s.ok()) return s;
  for (int r = 0; r < w; ++r) {
    const int64_t b = ChunkBegin(n, w, r), e = ChunkBegin(n, w, r + 1);
    if (auto s = FitsInt(name, b * esize); !s.ok()) return s;
    send_counts[r] = static_cast<int>((e - b) * esize);
    send_displs[r] = static_cast<int>(b * esize);
    recv_counts[r] = static_cast<int>(mine);
    recv_displs[r] = static_cast<int>(r * mine);
  }
  std::vector<char> received(static_cast<size_t>(mine) * w);
  if (auto s = Mpi(api, "MPI_Alltoallv",
                   api.MPI_Alltoallv(input, send_counts.data(), send_displs.data(), api.byte,
                                     received.data(), recv_counts.data(), recv_displs.data(),
                                     api.byte, c.comm));
      !s.ok())
    return s;
  std::vector<const void*> chunks(w);
  for (int r = 0; r < w; ++r) chunks[r] = received.data() + r * mine;
  reduced->resize(static_cast<size_t>(mine));
  ReduceInRankOrder(chunks.data(), w, hi - lo, dtype, reduce, reduced->data());
  return Status::Ok();
}

Status RunCollective(const MNT_Collectives_Run_Args& a) {
  const MNT_CollectiveOp op = a.op;
  const char* name = OpName(op);
  MNT_Communicator* c = a.communicator;
  if (c == nullptr) return sdk::InvalidArgument(Format("%s: communicator is NULL", name));
  const bool reduction =
      op == MNT_COLLECTIVE_ALL_REDUCE || op == MNT_COLLECTIVE_REDUCE_SCATTER;
  if (op != MNT_COLLECTIVE_ALL_REDUCE && op != MNT_COLLECTIVE_REDUCE_SCATTER &&
      op != MNT_COLLECTIVE_ALL_GATHER && op != MNT_COLLECTIVE_BROADCAST) {
    return sdk::InvalidArgument(Format("Collectives_Run: unknown op %d", static_cast<int>(op)));
  }
  if (a.output == nullptr || a.output->data == nullptr) {
    return sdk::InvalidArgument(Format("%s: output is missing", name));
  }
  const bool input_optional = op == MNT_COLLECTIVE_BROADCAST && a.root != c->rank;
  if (!input_optional && (a.input == nullptr || a.input->data == nullptr)) {
    return sdk::InvalidArgument(Format("%s: input is missing", name));
  }
  const MNT_DType dtype = a.output->dtype;
  if (a.input != nullptr && a.input->data != nullptr && a.input->dtype != dtype) {
    return sdk::InvalidArgument(Format("%s: input dtype %d differs from output dtype %d", name,
                                       static_cast<int>(a.input->dtype),
                                       static_cast<int>(dtype)));
  }
  if (reduction) {
    if (dtype != MNT_DTYPE_F32 && dtype != MNT_DTYPE_F16 && dtype != MNT_DTYPE_BF16) {
      return sdk::InvalidArgument(Format("%s: reductions take F32, F16 or BF16, not dtype %d",
                                         name, static_cast<int>(dtype)));
    }
    if (a.reduce != MNT_REDUCE_OP_SUM && a.reduce != MNT_REDUCE_OP_AVG &&
        a.reduce != MNT_REDUCE_OP_MAX) {
      return sdk::InvalidArgument(
          Format("%s: unknown reduce op %d", name, static_cast<int>(a.reduce)));
    }
  }
  const int64_t esize = CollectiveElementBytes(dtype);
  if (esize == 0) {
    return sdk::InvalidArgument(Format("%s: unknown dtype %d", name, static_cast<int>(dtype)));
  }
  const int w = c->world;
  const int64_t out_n = Numel(*a.output);
  const int64_t in_n = a.input != nullptr && a.input->data != nullptr ? Numel(*a.input) : -1;
  const mpi::Api* api = nullptr;
  if (auto s = ReadyMpi(&api); !s.ok()) return s;
  char* out = static_cast<char*>(a.output->data);
  switch (op) {
    case MNT_COLLECTIVE_ALL_REDUCE: {
      if (in_n != out_n) {
        return sdk::InvalidArgument(Format("%s: input has %lld elements, output %lld", name,
                                           static_cast<long long>(in_n),
                                           static_cast<long long>(out_n)));
      }
      std::vector<char> reduced;
      if (auto s = ExchangeAndReduce(*api, *c, name, static_cast<const char*>(a.input->data),
                                     out_n, esize, dtype, a.reduce, &reduced);
          !s.ok())
        return s;
      std::vector<int> counts(w), displs(w);
      for (int r = 0; r < w; ++r) {
        counts[r] = static_cast<int>((ChunkBegin(out_n, w, r + 1) - ChunkBegin(out_n, w, r)) *
                                     esize);
        displs[r] = static_cast<int>(ChunkBegin(out_n, w, r) * esize);
      }
      return Mpi(*api, "MPI_Allgatherv",
                 api->MPI_Allgatherv(reduced.data(), static_cast<int>(reduced.size()),
                                     api->byte, out, counts.data(), displs.data(), api->byte,
                                     c->comm));
    }
    case MNT_COLLECTIVE_REDUCE_SCATTER: {
      if (in_n != out_n * w) {
        return sdk::InvalidArgument(Format(
            "%s: input has %lld elements, expected world size %d x output's %lld", name,
            static_cast<long long>(in_n), w, static_cast<long long>(out_n)));
      }
      // Equal chunks: ChunkBegin(W*n, W, r) = r*n.
      std::vector<char> reduced;
      if (auto s = ExchangeAndReduce(*api, *c, name, static_cast<const char*>(a.input->data),
                                     in_n, esize, dtype, a.reduce, &reduced);
          !s.ok())
        return s;
      std::memcpy(out, reduced.data(), reduced.size());
      return Status::Ok();
    }
    case MNT_COLLECTIVE_ALL_GATHER: {
      if (out_n != in_n * w) {
        return sdk::InvalidArgument(Format(
            "%s: output has %lld elements, expected world size %d x input's %lld", name,
            static_cast<long long>(out_n), w, static_cast<long long>(in_n)));
      }
      const int64_t bytes = in_n * esize;
      if (auto s = FitsInt(name, bytes * w); !s.ok()) return s;
      const void* send = a.input->data;
      if (send == out + c->rank * bytes) send = MPI_IN_PLACE;  // in-place gather
      return Mpi(*api, "MPI_Allgather",
                 api->MPI_Allgather(send, static_cast<int>(bytes), api->byte, out,
                                    static_cast<int>(bytes), api->byte, c->comm));
    }
    case MNT_COLLECTIVE_BROADCAST: {
      if (a.root < 0 || a.root >= w) {
        return sdk::InvalidArgument(Format("%s: root %d outside world size %d", name, a.root, w));
      }
      if (in_n >= 0 && in_n != out_n) {
        return sdk::InvalidArgument(Format("%s: input has %lld elements, output %lld", name,
                                           static_cast<long long>(in_n),
                                           static_cast<long long>(out_n)));
      }
      const int64_t bytes = out_n * esize;
      if (auto s = FitsInt(name, bytes); !s.ok()) return s;
      if (c->rank == a.root && a.input->data != out) std::memmove(out, a.input->data, bytes);
      return Mpi(*api, "MPI_Bcast",
                 api->MPI_Bcast(out, static_cast<int>(bytes), api->byte, a.root, c->comm));
    }
    default:
      return Status::Ok();
  }
}

MNT_Error* CollectivesRun(MNT_Collectives_Run_Args* args) {
  return Guard("Collectives_Run", [&]() -> Status {
    if (args == nullptr) return sdk::InvalidArgument("Collectives_Run: args is NULL");
    if (auto s = sdk::CheckStructSize("MNT_Collectives_Run_Args", MNT_Collectives_Run_Args_STRUCT_SIZE, args->struct_size);
        !s.ok())
      return s;
    return RunCollective(*args);
  });
}

}  // namespace

MNT_Collectives_Extension* CpuCollectivesExtension() {
  static MNT_Collectives_Extension ext = sdk::MakeCollectivesExtension(
      &GetUniqueId, &CommunicatorCreate, &CommunicatorDestroy, &CollectivesRun);
  return &ext;
}

}  // namespace mnt::cpu

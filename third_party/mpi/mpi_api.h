// Open MPI's C API, resolved from libmpi.so.40 at run time. Nothing links
// MPI: the trainer and the CPU backend run without it (one process), and
// the GPU device bundle, whose machine has no Debian packages, still loads
// them. Only a data-parallel run (launched by mpirun or srun) loads it.
//
// Open MPI's handles (MPI_COMM_WORLD, MPI_BYTE) are addresses of library
// globals, which mpi.h's macros would make link-time references: they are
// looked up with dlsym too. This ties the table to Open MPI's ABI (Debian's
// Open MPI 4.1, libmpi.so.40), which is what the project ships with.
#ifndef MANTISSA_THIRD_PARTY_MPI_MPI_API_H_
#define MANTISSA_THIRD_PARTY_MPI_MPI_API_H_

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

namespace mnt::mpi {

// Every MPI function Mantissa calls; add one here before calling it.
#define MNT_MPI_FUNCTIONS(X)  \
  X(MPI_Initialized)          \
  X(MPI_Finalized)            \
  X(MPI_Init_thread)          \
  X(MPI_Query_thread)         \
  X(MPI_Finalize)             \
  X(MPI_Abort)                \
  X(MPI_Comm_rank)            \
  X(MPI_Comm_size)            \
  X(MPI_Comm_dup)             \
  X(MPI_Comm_free)            \
  X(MPI_Barrier)              \
  X(MPI_Bcast)                \
  X(MPI_Allgather)            \
  X(MPI_Allgatherv)           \
  X(MPI_Alltoallv)            \
  X(MPI_Ibcast)               \
  X(MPI_Iallgather)           \
  X(MPI_Iallgatherv)          \
  X(MPI_Ialltoallv)           \
  X(MPI_Test)                 \
  X(MPI_Wait)                 \
  X(MPI_Error_string)         \
  X(MPI_Get_library_version)

struct Api {
#define MNT_MPI_POINTER_(f) decltype(&::f) f = nullptr;
  MNT_MPI_FUNCTIONS(MNT_MPI_POINTER_)
#undef MNT_MPI_POINTER_
  MPI_Comm comm_world = nullptr;  // MPI_COMM_WORLD
  MPI_Datatype byte = nullptr;    // MPI_BYTE
};

// The table, loaded on first use (thread safe); nullptr when libmpi.so.40
// (or $MANTISSA_MPI_LIBRARY) cannot be loaded or lacks a symbol, with the
// reason in *why.
const Api* Load(std::string* why);

// MPI is initialised (by this process's host or a plugin) and not finalised.
bool IsInitialized(const Api& api);

// Initialises MPI unless it already is, asking for MPI_THREAD_MULTIPLE: the
// CPU backend's started collectives run on a thread of their own while the
// host thread may call MPI too (a library that provides less is still
// used: the backend then runs started collectives before Start returns).
// An error message, empty on success.
std::string EnsureInitialized(const Api& api);

// "MPI_Bcast: MPI_ERR_TRUNCATE: message truncated", or "" for MPI_SUCCESS.
std::string ErrorText(const Api& api, const char* call, int code);

}  // namespace mnt::mpi

#endif  // MANTISSA_THIRD_PARTY_MPI_MPI_API_H_

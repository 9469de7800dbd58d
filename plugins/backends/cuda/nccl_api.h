// NCCL's C API, resolved from libnccl.so.2 at run time. The cuda backend
// does not link NCCL: the library is over 200 MB, optional (only a
// data-parallel run needs it) and absent from many machines that have
// cuBLAS, so mnt_backend_cuda.so loads and runs every op without it, and
// only the collectives extension's calls fail, with the one reason the
// library could not be loaded. nccl.h comes from the CUDA toolkit
// (@cuda//:headers) for its types; its functions are reached only through
// this table.
//
// $MANTISSA_NCCL_LIBRARY names another file to load instead of
// "libnccl.so.2" (found through the usual dlopen search).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_NCCL_API_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_NCCL_API_H_

#include <nccl.h>

#include <memory>
#include <string>

namespace mnt::cuda::nccl {

// Every NCCL function the backend calls; add one here before calling it.
// All exist since NCCL 2.4 (ncclCommGetAsyncError, ncclCommAbort).
#define MNT_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)           \
  X(ncclGetErrorString)       \
  X(ncclGetUniqueId)          \
  X(ncclCommInitRank)         \
  X(ncclCommDestroy)          \
  X(ncclCommAbort)            \
  X(ncclCommGetAsyncError)    \
  X(ncclAllReduce)            \
  X(ncclReduceScatter)        \
  X(ncclAllGather)            \
  X(ncclBroadcast)

struct Api {
#define MNT_NCCL_POINTER_(f) decltype(&::f) f = nullptr;
  MNT_NCCL_FUNCTIONS(MNT_NCCL_POINTER_)
#undef MNT_NCCL_POINTER_
  // Since NCCL 2.13; NULL in older libraries (messages then give the
  // status string only).
  decltype(&::ncclGetLastError) ncclGetLastError = nullptr;
  int version = 0;       // ncclGetVersion's code, e.g. 22809 for 2.28.9
  std::string file;      // what was dlopen()ed
};

// The oldest NCCL with ncclAvg (MNT_REDUCE_OP_AVG): 2.10.0.
inline constexpr int kAvgSinceVersion = 21000;

// The table of `file` (a name for the dlopen search or a path), loaded now
// and never unloaded; nullptr when it cannot be loaded or lacks a function,
// with one line in *why: "NCCL is not available: <dlerror>" or "NCCL is not
// available: <file> has no <function>".
std::unique_ptr<const Api> LoadFrom(const std::string& file, std::string* why);

// The process's table, loaded on first use (thread safe) from
// $MANTISSA_NCCL_LIBRARY or "libnccl.so.2"; nullptr (and the reason in
// *why, when given) when it cannot be loaded.
const Api* Load(std::string* why);

// "2.28.9" from a version code (both of NCCL's encodings: 2.8.4 is 2804,
// 2.10.0 is 21000).
std::string VersionString(int code);

// "ncclAllReduce: invalid argument (run with NCCL_DEBUG=WARN for details)
// (ncclInvalidArgument; last NCCL error: ...)" for a failed call, "" for
// ncclSuccess; one line. `comm` (may be NULL) is what ncclGetLastError
// asks about.
std::string ErrorText(const Api& api, const char* call, ncclResult_t result,
                      ncclComm_t comm = nullptr);

}  // namespace mnt::cuda::nccl

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_NCCL_API_H_

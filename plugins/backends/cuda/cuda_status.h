// CUDA runtime and cuBLASLt status codes as sdk::Status naming the call, e.g.
//   "cudaMalloc(1048576 bytes): out of memory (cudaErrorMemoryAllocation)".
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_CUDA_STATUS_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_CUDA_STATUS_H_

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "plugins/sdk/status.h"

namespace mnt::cuda {

inline sdk::Status CudaStatus(cudaError_t err, const std::string& call) {
  if (err == cudaSuccess) return sdk::Status::Ok();
  const MNT_ErrorCode code = err == cudaErrorMemoryAllocation
                                 ? MNT_ERROR_RESOURCE_EXHAUSTED
                                 : MNT_ERROR_INTERNAL;
  return sdk::Status(code, call + ": " + cudaGetErrorString(err) + " (" +
                               cudaGetErrorName(err) + ")");
}

inline sdk::Status CublasStatus(cublasStatus_t st, const std::string& call) {
  if (st == CUBLAS_STATUS_SUCCESS) return sdk::Status::Ok();
  const MNT_ErrorCode code = st == CUBLAS_STATUS_NOT_SUPPORTED
                                 ? MNT_ERROR_UNIMPLEMENTED
                                 : st == CUBLAS_STATUS_ALLOC_FAILED
                                       ? MNT_ERROR_RESOURCE_EXHAUSTED
                                       : MNT_ERROR_INTERNAL;
  return sdk::Status(code, call + ": " + cublasLtGetStatusString(st) + " (" +
                               cublasLtGetStatusName(st) + ")");
}

inline sdk::Status CudnnStatus(cudnnStatus_t st, const std::string& call) {
  if (st == CUDNN_STATUS_SUCCESS) return sdk::Status::Ok();
  const MNT_ErrorCode code =
      st == CUDNN_STATUS_NOT_SUPPORTED ? MNT_ERROR_UNIMPLEMENTED
      : st == CUDNN_STATUS_ALLOC_FAILED ? MNT_ERROR_RESOURCE_EXHAUSTED
                                        : MNT_ERROR_INTERNAL;
  return sdk::Status(code, call + ": " + cudnnGetErrorString(st));
}

}  // namespace mnt::cuda

// The call's description (`call`: a literal, or a Format) is only built when
// the status is an error, so checked calls on the hot path cost no string.
#define MNT_CUDA_RETURN_IF_ERROR(expr, call)                       \
  do {                                                             \
    const cudaError_t mnt_cuda_err_ = (expr);                      \
    if (mnt_cuda_err_ != cudaSuccess) {                            \
      return ::mnt::cuda::CudaStatus(mnt_cuda_err_, (call));       \
    }                                                              \
  } while (0)
#define MNT_CUDNN_RETURN_IF_ERROR(expr, call)                      \
  do {                                                             \
    const cudnnStatus_t mnt_cudnn_st_ = (expr);                    \
    if (mnt_cudnn_st_ != CUDNN_STATUS_SUCCESS) {                   \
      return ::mnt::cuda::CudnnStatus(mnt_cudnn_st_, (call));      \
    }                                                              \
  } while (0)
#define MNT_CUBLAS_RETURN_IF_ERROR(expr, call)                     \
  do {                                                             \
    const cublasStatus_t mnt_cublas_st_ = (expr);                  \
    if (mnt_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                 \
      return ::mnt::cuda::CublasStatus(mnt_cublas_st_, (call));    \
    }                                                              \
  } while (0)

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_CUDA_STATUS_H_

// What the CUDA backend's launch code shares: a device buffer as kernels take
// it, launch geometry, and the status of a launch named after the op and the
// kernel ("LAYERNORM_BACKWARD: layernorm_param_grads launch: ...").
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_LAUNCH_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

using backend::OpCall;
using backend::Operand;

// A float (or I32) buffer on the device; data NULL means "absent".
struct DevTensor {
  void* data = nullptr;
  MNT_DType dtype = MNT_DTYPE_INVALID;
};

inline DevTensor Dev(const Operand& o) {
  return o.present() ? DevTensor{o->data, o->dtype} : DevTensor{};
}

// Threads per block of most kernels. A kernel launched with more (a
// one-block reduction over kWideThreads) declares __launch_bounds__ of its
// block size, so ptxas keeps its registers within what that many threads
// may use; //tools/cuda_static:kernel_resources_test checks both.
constexpr int kThreads = 256;
constexpr int kWideThreads = 1024;

// Blocks for a grid-stride loop over `work` items of `per_block` each.
inline unsigned GridFor(int64_t work, int64_t per_block) {
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > (1 << 20)) blocks = 1 << 20;
  return static_cast<unsigned>(blocks);
}

// One block per row (at most 2^20 blocks; kernels stride over the rest).
inline unsigned RowGrid(int64_t rows) {
  return static_cast<unsigned>(rows < (1 << 20) ? (rows > 0 ? rows : 1) : (1 << 20));
}

inline bool Aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// kernel<<<grid, block, shared_bytes, s>>>(args...) returning this launch's
// own status: cudaLaunchKernelEx reports it directly, so an error left by an
// earlier call is never blamed on this launch. A failed launch's error is
// also taken out of the runtime's last-error slot, so that it is reported
// exactly once (by the launcher that caused it). Launchers that launch
// nothing return cudaSuccess, never cudaGetLastError().
template <typename... Params, typename... Args>
cudaError_t Launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                   size_t shared_bytes, cudaStream_t s, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = s;
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) (void)cudaGetLastError();
  return err;
}

// "<OP>: <kernel> launch: <CUDA error>" as INTERNAL, or OK.
inline sdk::Status Launched(const OpCall& call, cudaError_t err, const char* kernel) {
  if (err == cudaSuccess) return sdk::Status::Ok();
  return sdk::Status(MNT_ERROR_INTERNAL,
                     sdk::Format("%s: %s launch: %s (%s)", call.op_name(), kernel,
                                 cudaGetErrorString(err), cudaGetErrorName(err)));
}
inline sdk::Status Launched(const backend::TypedCall& call, cudaError_t err,
                            const char* kernel) {
  return Launched(*call.op, err, kernel);
}
// The launches just issued (cudaGetLastError): only for launch code not yet
// on Launch(), which may see an error left by an earlier call.
inline sdk::Status Launched(const backend::TypedCall& call, const char* kernel) {
  return Launched(*call.op, cudaGetLastError(), kernel);
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_LAUNCH_H_

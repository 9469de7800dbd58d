// Backend_Run: checks every tensor view, then dispatches to the op.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_RUN_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_RUN_H_

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/cuda/backend_state.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

// Ops appended to the ABI later (e.g. attention) are not supported until
// implemented here: GetOpSupport says 0 and Run says UNIMPLEMENTED.
bool IsSupportedOp(MNT_Op op);

sdk::Status RunOp(CudaBackend& backend, const MNT_Backend_Run_Args& args);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_RUN_H_

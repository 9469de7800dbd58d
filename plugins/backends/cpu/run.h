// Backend_Run: checks every tensor view, then dispatches to the op's kernel.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_RUN_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_RUN_H_

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/cpu/backend_state.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

bool IsSupportedOp(MNT_Op op);

sdk::Status RunOp(CpuBackend& backend, const MNT_Backend_Run_Args& args);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_RUN_H_

// The CPU backend plugin ("cpu"): the numerical reference for every other
// backend. Link //plugins/backends/cpu:cpu_backend_lib and call through the
// returned table, or dlopen mnt_backend_cpu.so.
//
// Backend_Create options: "threads=N" sets OpenBLAS's thread count (process
// wide; default: leave OpenBLAS's setting). device_ordinal must be 0.
// Work is synchronous: every call has finished when it returns.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_CPU_BACKEND_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_CPU_BACKEND_H_

#include "plugins/abi/mantissa.h"

namespace mnt::cpu {

const MNT_Plugin_Api* CpuBackendPluginApi();

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_CPU_BACKEND_H_

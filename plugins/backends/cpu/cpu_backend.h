// The CPU backend plugin ("cpu"): the numerical reference for every other
// backend. Link //plugins/backends/cpu:cpu_backend_lib and call through the
// returned table, or dlopen mnt_backend_cpu.so.
//
// Backend_Create options: "threads=N" sizes the OpenMP pool oneDNN and the
// kernels share and OpenBLAS's (process wide; default: leave them as they
// are); "gemm=auto|onednn|reference" picks the GEMM engine (default
// $MANTISSA_CPU_GEMM, else auto: oneDNN when libdnnl.so.2 loads; reference:
// operands rounded into fp32 copies and OpenBLAS sgemm, the numerical
// reference); "onednn_bf16=auto|native|fp32" (auto: oneDNN's bf16 kernels
// where the CPU has AVX512_BF16 or AMX). device_ordinal must be 0.
// Work is synchronous: every call has finished when it returns.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_CPU_BACKEND_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_CPU_BACKEND_H_

#include "plugins/abi/mantissa.h"

namespace mnt::cpu {

const MNT_Plugin_Api* CpuBackendPluginApi();

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_CPU_BACKEND_H_

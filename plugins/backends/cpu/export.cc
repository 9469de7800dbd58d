// The one exported symbol of mnt_backend_cpu.so.
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/export.h"

MNT_EXPORT_PLUGIN(mnt::cpu::CpuBackendPluginApi)

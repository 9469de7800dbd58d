// The one exported symbol of mnt_backend_cuda.so.
#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/sdk/export.h"

MNT_EXPORT_PLUGIN(mnt::cuda::CudaBackendPluginApi)

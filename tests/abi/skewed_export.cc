// The exported entry point of mnt_backend_skewed.so.
#include "plugins/sdk/export.h"
#include "tests/abi/skewed_backend.h"

MNT_EXPORT_PLUGIN(mnt::abi_test::SkewedBackendPluginApi)

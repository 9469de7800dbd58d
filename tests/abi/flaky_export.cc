// The exported entry point of mnt_backend_flaky.so.
#include "plugins/sdk/export.h"
#include "tests/abi/flaky_backend.h"

MNT_EXPORT_PLUGIN(mnt::abi_test::FlakyBackendPluginApi)

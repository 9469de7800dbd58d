// The one exported symbol of mnt_precision_fp8.so.
#include "plugins/precisions/precision_plugins.h"
#include "plugins/sdk/export.h"

MNT_EXPORT_PLUGIN(mnt::precision::Fp8PluginApi)

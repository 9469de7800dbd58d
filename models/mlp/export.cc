// The one exported symbol of mnt_model_mlp.so.
#include "models/mlp/mlp_model.h"
#include "plugins/sdk/export.h"

MNT_EXPORT_PLUGIN(mnt::mlp::MlpPluginApi)

// The one exported symbol of mnt_model_gpt2.so.
#include "models/gpt2/gpt2_model.h"
#include "plugins/sdk/export.h"

MNT_EXPORT_PLUGIN(mnt::gpt2::Gpt2PluginApi)

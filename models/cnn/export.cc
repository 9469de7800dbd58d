// The one exported symbol of mnt_model_cnn.so.
#include "models/cnn/cnn_model.h"
#include "plugins/sdk/export.h"

MNT_EXPORT_PLUGIN(mnt::cnn::CnnPluginApi)

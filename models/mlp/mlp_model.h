// Mantissa MLP model plugin ("mlp", mnt_model_mlp.so). Options and layout:
// see mlp_options.h and mlp_network.h.
#ifndef MANTISSA_MODELS_MLP_MLP_MODEL_H_
#define MANTISSA_MODELS_MLP_MLP_MODEL_H_

#include "plugins/abi/mantissa.h"

namespace mnt::mlp {

const MNT_Plugin_Api* MlpPluginApi();

}  // namespace mnt::mlp

#endif  // MANTISSA_MODELS_MLP_MLP_MODEL_H_

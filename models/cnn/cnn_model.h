// Mantissa CNN model plugin ("cnn", mnt_model_cnn.so). Options and layout:
// see cnn_options.h and cnn_network.h.
#ifndef MANTISSA_MODELS_CNN_CNN_MODEL_H_
#define MANTISSA_MODELS_CNN_CNN_MODEL_H_

#include "plugins/abi/mantissa.h"

namespace mnt::cnn {

const MNT_Plugin_Api* CnnPluginApi();

}  // namespace mnt::cnn

#endif  // MANTISSA_MODELS_CNN_CNN_MODEL_H_

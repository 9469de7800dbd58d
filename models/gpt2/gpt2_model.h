// Mantissa GPT-2 model plugin ("gpt2", mnt_model_gpt2.so). Options:
// gpt2_options.h; layout and math: gpt2_network.h.
#ifndef MANTISSA_MODELS_GPT2_GPT2_MODEL_H_
#define MANTISSA_MODELS_GPT2_GPT2_MODEL_H_

#include "models/gpt2/gpt2_network.h"
#include "plugins/abi/mantissa.h"

namespace mnt::gpt2 {

const MNT_Plugin_Api* Gpt2PluginApi();

// The network behind a model this plugin created (for tools that link the
// plugin statically, e.g. sampling needs the logits); NULL otherwise.
Gpt2Network* NetworkOf(MNT_Model* model);

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_GPT2_MODEL_H_

// Mantissa models: one parameter tensor as a model declares it (what
// Model_GetParamSpec reports).
#ifndef MANTISSA_PLUGINS_SDK_MODEL_PARAM_SPEC_H_
#define MANTISSA_PLUGINS_SDK_MODEL_PARAM_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/abi/mnt_model.h"

namespace mnt::models {

// How a Linear layer stores its weight.
enum class WeightLayout {
  kOutIn,  // W [out, in], y = x·Wᵀ + b (PyTorch's nn.Linear, GPT-2)
  kInOut,  // W [in, out], y = x·W + b (no transposes in the forward GEMM)
};

struct ParamSpec {
  std::string name;  // "layer0.weight", "block0.bn1.bias", "wte", ...
  std::vector<int64_t> dims;
  MNT_ParamInit init;
  float init_scale;  // std for NORMAL, bound for UNIFORM
  bool weight_decay;
  // For a matrix that a Linear layer multiplies: how it is stored, so LoRA
  // adapters (lora.h) know which dimension is the input. Others ignore it.
  WeightLayout layout = WeightLayout::kOutIn;
  // How many leading dims stack copies of one parameter (GPT-2's per-layer
  // weights [L, ...]: 1), reported as ABI 1.15's stacked_dims: optimizers
  // that choose by a tensor's size or shape then see each layer's copy as
  // a model with one tensor per layer would have it. At most rank - 1.
  int stacked_dims = 0;
  // What the parameter is to the model (ABI 1.16's role): EMBEDDING for a
  // table whose rows are gathered by id, whose 8-bit AdamW state stays in
  // 32 bits as Hugging Face's Trainer keeps an nn.Embedding's.
  MNT_ParamRole role = MNT_PARAM_ROLE_OTHER;
};

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_PARAM_SPEC_H_

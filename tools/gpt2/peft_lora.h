// GPT-2's LoRA adapters (plugins/sdk/model/lora.h, train --lora) in PEFT's
// format and back, and merged into the weights:
//   - adapter_model.safetensors: for each adapted layer i and module m,
//     base_model.model.transformer.h.<i>.<m>.lora_A.weight [r, in] and
//     .lora_B.weight [out, r], m one of attn.c_attn (Mantissa's qkvw),
//     attn.c_proj (attprojw), mlp.c_fc (fcw), mlp.c_proj (fcprojw): PEFT's
//     lora_A and lora_B are nn.Linear(in, r) and nn.Linear(r, out) whatever
//     the base layer, so these are Mantissa's A and B of layer i as they are;
//   - adapter_config.json: peft_type LORA, task_type CAUSAL_LM, r,
//     lora_alpha, lora_dropout 0, target_modules (the modules above),
//     fan_in_fan_out true (GPT-2's Conv1D stores [in, out]: PEFT then adds
//     (B·A)ᵀ·alpha/r to it), bias "none", use_rslora and use_dora false.
// Merging adds (alpha/r)·B·A to each adapted [out, in] weight of the llm.c
// layout (HF's Conv1D weight is its transpose, as PEFT's merge_and_unload
// writes it).
#ifndef MANTISSA_TOOLS_GPT2_PEFT_LORA_H_
#define MANTISSA_TOOLS_GPT2_PEFT_LORA_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/gpt2/llmc_format.h"
#include "models/gpt2/safetensors.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::gpt2 {

// One adapted weight of every layer: A [L, r, in] and B [L, out, r], fp32
// row-major.
struct Gpt2LoraWeight {
  std::string param;  // qkvw, attprojw, fcw or fcprojw
  int64_t out = 0, in = 0;
  std::vector<float> a, b;
};

struct Gpt2Lora {
  int64_t rank = 0;
  double alpha = 0;
  int64_t n_layer = 0;
  std::vector<Gpt2LoraWeight> weights;  // in the model's parameter order

  double scale() const { return alpha / static_cast<double>(rank); }
};

// The adapters of a gpt2 checkpoint (its model options' lora_* keys and
// tensors <param>.lora_A/.lora_B); nullopt for a checkpoint without LoRA.
// Refuses, in one line starting with `source`, an adapter on a weight PEFT's
// GPT-2 has no Linear module for (the tied wte head) and a missing or
// misshapen tensor.
absl::StatusOr<std::optional<Gpt2Lora>> LoraFromCheckpoint(const trainer::CheckpointData& ckpt,
                                                           const std::string& source);

// The model options of a checkpoint without their lora_* keys (what the
// network parses).
absl::StatusOr<std::string> NetworkOptions(const std::string& model_options,
                                           const std::string& source);

// adapter_model.safetensors' tensors (F32, or BF16 rounded to nearest even)
// and adapter_config.json (`base_model` as base_model_name_or_path).
std::vector<SafeTensor> PeftAdapterTensors(const Gpt2Lora& lora, bool bf16);
std::string PeftAdapterConfigJson(const Gpt2Lora& lora, const std::string& base_model);

// A PEFT LoRA adapter of a GPT-2 with `header`'s sizes, as Mantissa's
// adapters. Refuses, in one line starting with `source`: a config that is
// not LoRA as Mantissa computes it (peft_type, use_rslora, use_dora, bias,
// per-layer rank or alpha patterns, layers_to_transform), a module other
// than the four, a key or shape that does not fit, and a module missing
// from some layer.
absl::StatusOr<Gpt2Lora> LoraFromPeft(const std::string& config_json,
                                      const std::vector<SafeTensor>& tensors,
                                      const LlmcHeader& header, const std::string& source);

// Fresh adapters for `base` (the llm.c model's parameter specs) from
// train's --lora value, drawn as train --lora --seed=`seed` draws them
// (trainer/core/param_init.h, each adapter's index after the model's
// parameters): what the run would start from.
absl::StatusOr<Gpt2Lora> FreshLora(const LlmcModel& base, const std::string& lora_flag,
                                   uint64_t seed, const std::string& source);

// W += (alpha/r)·B·A for every adapted weight of `model` (fp64 products,
// rounded once into fp32).
absl::Status MergeLora(const Gpt2Lora& lora, LlmcModel* model);

// The lora_* model options of `lora` (plugins/sdk/model/lora.h's keys),
// and the --lora flag that gives them.
std::string LoraModelOptionsOf(const Gpt2Lora& lora);
std::string LoraFlagOf(const Gpt2Lora& lora);

// Makes an imported checkpoint (llmc_convert.h's CheckpointFromLlmc, step 0)
// the one train --lora would write at step 0 with these adapters: the model
// options gain the lora_* keys, the base parameters lose their optimizer
// state (they are frozen), the adapters follow with zeroed state for
// `optimizer` (adamw|adam: two slots, sgd: one).
absl::Status AddLoraToCheckpoint(const Gpt2Lora& lora, const std::string& optimizer,
                                 trainer::CheckpointData* ckpt);

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_PEFT_LORA_H_

// Mantissa's GPT-2 parameters (as an llm.c model, models/gpt2/llmc_format.h)
// in Hugging Face's GPT2LMHeadModel layout and back:
//   - names: transformer.wte.weight, transformer.wpe.weight,
//     transformer.h.<i>.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,mlp.c_proj}
//     .{weight,bias}, transformer.ln_f.{weight,bias}; lm_head.weight is
//     tied to wte, so it is not written (what save_pretrained writes);
//   - HF's Conv1D stores a linear layer's weight as [in, out], the
//     transpose of llm.c's [out, in]: c_attn, c_proj, c_fc, mlp.c_proj;
//   - wte has the real vocabulary's rows, not llm.c's padded ones;
//   - config.json: gelu_new (GELU's tanh form, what the model computes),
//     layer_norm_epsilon 1e-5, no dropout, tied embeddings.
#ifndef MANTISSA_MODELS_GPT2_HF_GPT2_H_
#define MANTISSA_MODELS_GPT2_HF_GPT2_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/gpt2/llmc_format.h"
#include "models/gpt2/safetensors.h"

namespace mnt::gpt2 {

// The tensors of `model` under HF's names, as F32 or BF16 (rounded to
// nearest even).
absl::StatusOr<std::vector<SafeTensor>> HfTensorsFromLlmc(const LlmcModel& model, bool bf16);

// config.json for `header`; `bf16` sets torch_dtype.
std::string HfConfigJson(const LlmcHeader& header, bool bf16);

// The llm.c model of an HF GPT-2: config.json's text and model.safetensors'
// tensors (F32, BF16 or F16; names with or without "transformer."). Padded
// vocabulary rows are zero. Refuses, in one line starting with `source`, a
// config that is not GPT-2 as Mantissa computes it (activation, epsilon,
// n_inner), a missing, extra or misshapen tensor, and an lm_head.weight
// that differs from wte (untied output layers are not supported).
absl::StatusOr<LlmcModel> LlmcFromHf(const std::string& config_json,
                                     const std::vector<SafeTensor>& tensors,
                                     const std::string& source);

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_HF_GPT2_H_

// llm.c's GPT-2 checkpoint format (train_gpt2.c / train_gpt2.py):
//   header: 256 little-endian int32 — [0] magic 20240326, [1] version
//   (3: fp32 parameters, 5: bf16 parameters), [2] max_seq_len,
//   [3] vocab_size, [4] num_layers, [5] num_heads, [6] channels,
//   [7] padded_vocab_size, the rest 0;
//   then the 16 parameter tensors back to back in llm.c's order, which is
//   the plugin's order and layout (gpt2_network.h).
// Parameters are held as fp32 here: bf16 widens exactly, and writing
// version 5 rounds to nearest even, so bf16 files round-trip bit for bit.
#ifndef MANTISSA_MODELS_GPT2_LLMC_FORMAT_H_
#define MANTISSA_MODELS_GPT2_LLMC_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "models/gpt2/gpt2_network.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/sdk/status.h"

namespace mnt::gpt2 {

inline constexpr int32_t kLlmcMagic = 20240326;
inline constexpr int32_t kLlmcVersionF32 = 3;
inline constexpr int32_t kLlmcVersionBf16 = 5;
inline constexpr size_t kLlmcHeaderInts = 256;
inline constexpr size_t kLlmcHeaderBytes = kLlmcHeaderInts * sizeof(int32_t);

struct LlmcHeader {
  int32_t version = kLlmcVersionF32;
  int64_t max_seq_len = 0, vocab = 0, n_layer = 0, n_head = 0, channels = 0,
          padded_vocab = 0;
};

struct LlmcModel {
  LlmcHeader header;
  std::vector<ParamSpec> specs;            // Gpt2ParamSpecs of the header
  std::vector<std::vector<float>> params;  // one per spec, row-major
};

// The model configuration a header describes (n_layer, n_head, d_model,
// seq_len, vocab).
Gpt2Config ConfigOfHeader(const LlmcHeader& header);

// Parses a whole llm.c checkpoint. Refuses, in one line starting with
// `source`: a short header, a bad magic, a version other than 3 or 5,
// non-positive or inconsistent sizes (channels % heads, padded vocab not
// llm.c's/Mantissa's multiple of 128), a truncated or over-long file.
sdk::Status ParseLlmc(const std::string& bytes, const std::string& source,
                      LlmcModel* out);

// The file bytes of `model` as `version` (3 or 5). Checks every tensor's
// size against the specs of its header.
sdk::Status EncodeLlmc(const LlmcModel& model, int32_t version,
                       std::string* bytes);

// OK when the header matches the model options `config` (n_layer, n_head,
// d_model, seq_len, and vocab when the options set it); otherwise one line
// naming the first field that differs and both values.
sdk::Status CheckLlmcMatchesConfig(const LlmcHeader& header,
                                   const Gpt2Config& config,
                                   const std::string& source);

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_LLMC_FORMAT_H_

// Conversion between llm.c GPT-2 checkpoints (models/gpt2/llmc_format.h)
// and Mantissa checkpoints (trainer/checkpoint).
//
// An imported checkpoint is what the trainer itself would write at step 0
// with these weights: fp32 parameters under the plugin's names, zeroed
// optimizer state, the sampler at the start of epoch 0 for `seed`, and the
// loss scaler at its initial scale. So `train --resume` with the same
// --model_options, --precision, --optimizer and --seed starts from the
// llm.c weights exactly as a fresh run starts from random ones.
#ifndef MANTISSA_TOOLS_GPT2_LLMC_CONVERT_H_
#define MANTISSA_TOOLS_GPT2_LLMC_CONVERT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "models/gpt2/llmc_format.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::gpt2 {

struct ImportOptions {
  std::string model_options;        // must agree with the file's header
  std::string precision = "fp32";   // fp32|tf32|bf16|fp16
  std::string optimizer = "adamw";  // adamw|adam|sgd
  uint64_t seed = 1234;             // the trainer's --seed
  float init_scale = 65536.0f;      // fp16's loss scale at step 0
};

// Metadata key recording the llm.c vocab_size (the options may leave vocab
// to the data), so an export writes the same header back.
inline constexpr char kLlmcVocabKey[] = "llmc_vocab_size";

absl::StatusOr<trainer::CheckpointData> CheckpointFromLlmc(
    const LlmcModel& model, const ImportOptions& options,
    const std::string& source);

// What the caller knows of the real vocabulary (wte's rows that are
// tokens; the rest pad to a multiple of 128).
struct VocabHint {
  int64_t flag = 0;     // --vocab_size: wins over everything
  int64_t run = 0;      // the run folder's (saved config, tokenizer.model)
  std::string unknown;  // why the run does not say: for the error asking for --vocab_size
};

// The parameters of a gpt2 checkpoint as an llm.c model. The vocabulary:
// hint.flag, else the options' vocab, else the recorded llm.c vocab_size,
// else hint.run, else 50257 for a padded vocabulary of 50304 and 256 for
// 256; otherwise an error asking for --vocab_size.
absl::StatusOr<LlmcModel> LlmcFromCheckpoint(const trainer::CheckpointData& ckpt,
                                             const VocabHint& hint, const std::string& source);
inline absl::StatusOr<LlmcModel> LlmcFromCheckpoint(const trainer::CheckpointData& ckpt,
                                                    int64_t vocab, const std::string& source) {
  return LlmcFromCheckpoint(ckpt, VocabHint{vocab, 0, ""}, source);
}

// The same, read from the checkpoint file at `path` (the export tools).
absl::StatusOr<LlmcModel> LlmcFromCheckpointFile(const std::string& path, const VocabHint& hint);

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_LLMC_CONVERT_H_

// Text generation from a Mantissa gpt2 checkpoint: the model plugin
// (linked statically, models/gpt2) on the CPU backend, reading the logits of
// the last Forward through Gpt2Network::Logits.
#ifndef MANTISSA_TOOLS_GPT2_SAMPLER_H_
#define MANTISSA_TOOLS_GPT2_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/gpt2/llmc_convert.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::gpt2 {

struct SampleOptions {
  int64_t max_new_tokens = 200;
  float temperature = 0.8f;  // 0: greedy (argmax)
  int64_t top_k = 40;        // 0: the whole vocabulary
  uint64_t seed = 1234;
};

// Picks the next token from `logits` (the real vocabulary only): argmax when
// temperature is 0, else a draw from softmax(logits / temperature) over the
// top_k largest (ties: lower id first). `uniform` is a draw in [0, 1).
int64_t PickToken(const std::vector<float>& logits, float temperature,
                  int64_t top_k, double uniform);

class Gpt2Sampler {
 public:
  // Loads the weights of a gpt2 checkpoint; the real vocabulary as
  // LlmcFromCheckpoint resolves it from `vocab` and the checkpoint.
  static absl::StatusOr<std::unique_ptr<Gpt2Sampler>> Create(
      const trainer::CheckpointData& ckpt, const VocabHint& vocab,
      const std::string& source);
  ~Gpt2Sampler();

  int64_t vocab() const;
  int64_t context() const;

  // Continues `prompt` (token ids < vocab, at least one) by up to
  // max_new_tokens tokens; returns only the new ones. The context slides
  // when it fills. Same seed, same tokens.
  absl::StatusOr<std::vector<int32_t>> Generate(
      const std::vector<int32_t>& prompt, const SampleOptions& options);

  // The logits (real vocabulary) at every position of `tokens` (at least
  // one, at most context()), row-major [tokens.size(), vocab()]: what the
  // device check compares with Hugging Face's GPT2LMHeadModel.
  absl::StatusOr<std::vector<float>> Logits(const std::vector<int32_t>& tokens);

 private:
  absl::Status CheckTokens(const std::vector<int32_t>& tokens) const;
  // Runs the model on the last context() tokens; returns how many it took.
  absl::StatusOr<int64_t> Forward(const std::vector<int32_t>& tokens);
  // Row `row` of the last Forward's logits, the real vocabulary's columns.
  absl::Status LogitsRow(int64_t row, std::vector<float>* out);

  struct State;
  explicit Gpt2Sampler(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_SAMPLER_H_

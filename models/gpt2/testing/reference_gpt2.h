// A float64 GPT-2 forward and loss, written independently of the plugin
// (plain loops), in the plugin's parameter layout (gpt2_network.h). Tests
// differentiate it by central finite differences.
#ifndef MANTISSA_MODELS_GPT2_TESTING_REFERENCE_GPT2_H_
#define MANTISSA_MODELS_GPT2_TESTING_REFERENCE_GPT2_H_

#include <cstdint>
#include <vector>

namespace mnt::gpt2::testing {

struct RefConfig {
  int64_t n_layer, n_head, d_model, max_t, vocab, padded_vocab;
};

// params: the 16 tensors in spec order, flattened. ids/targets: [B*T].
// Returns the mean cross-entropy over the B*T targets; `logits` (optional)
// receives [B*T, padded_vocab].
double ReferenceLoss(const RefConfig& c,
                     const std::vector<std::vector<double>>& params,
                     const std::vector<int>& ids, const std::vector<int>& targets,
                     int64_t batch, int64_t t,
                     std::vector<double>* logits = nullptr);

}  // namespace mnt::gpt2::testing

#endif  // MANTISSA_MODELS_GPT2_TESTING_REFERENCE_GPT2_H_

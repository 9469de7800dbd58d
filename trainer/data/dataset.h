// In-memory datasets the trainer feeds to models, and how they are split and
// gathered into batches.
#ifndef MANTISSA_TRAINER_DATA_DATASET_H_
#define MANTISSA_TRAINER_DATA_DATASET_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace mnt {
namespace trainer {

// Fixed-size examples with one class label each.
struct ClassificationData {
  int64_t num_examples = 0;
  std::vector<int64_t> example_dims;  // e.g. {8, 8} for digits, {28, 28} for MNIST
  int64_t num_classes = 0;
  std::vector<float> features;  // num_examples * product(example_dims), normalised 0..1
  std::vector<int32_t> labels;  // num_examples values in [0, num_classes)

  int64_t example_size() const;  // product(example_dims)
};

// A token stream (byte-level text: vocab 256).
struct TokenData {
  std::vector<int32_t> tokens;
  int64_t vocab = 0;
};

struct ClassificationSplit {
  ClassificationData train;
  ClassificationData validation;
};

// Moves round(fraction * n) examples, chosen by a shuffle fixed by `seed`,
// into `validation` (kept in their original relative order) and the rest into
// `train`. Both must end up non-empty: InvalidArgument otherwise.
absl::StatusOr<ClassificationSplit> SplitTrainValidation(const ClassificationData& data,
                                                         double fraction, uint64_t seed);

struct TokenSplit {
  TokenData train;
  TokenData validation;
};

// The last round(fraction * n) tokens become validation (text keeps its
// order: shuffling tokens would destroy it). Each part needs at least
// min_tokens tokens (seq_len + 1 for one window): InvalidArgument otherwise.
absl::StatusOr<TokenSplit> SplitTokens(const TokenData& data, double fraction,
                                       int64_t min_tokens);

// Copies the examples at `indices` into features (row-major, one example
// after the other) and labels, resizing both. Indices must be in range.
void GatherExamples(const ClassificationData& data, const std::vector<int64_t>& indices,
                    std::vector<float>* features, std::vector<int32_t>* labels);

// For each window index w: inputs = tokens[w*seq_len, w*seq_len + seq_len),
// targets = the same shifted by one. Windows must be < NumTextWindows().
void GatherTextWindows(const TokenData& data, int64_t seq_len,
                       const std::vector<int64_t>& windows, std::vector<int32_t>* inputs,
                       std::vector<int32_t>* targets);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_DATASET_H_

#include "trainer/data/dataset.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "trainer/data/sampler.h"

namespace mnt {
namespace trainer {
namespace {

ClassificationData EmptyLike(const ClassificationData& data) {
  ClassificationData out;
  out.example_dims = data.example_dims;
  out.num_classes = data.num_classes;
  return out;
}

void Append(const ClassificationData& from, int64_t index, ClassificationData* to) {
  const int64_t size = from.example_size();
  to->features.insert(to->features.end(), from.features.begin() + index * size,
                      from.features.begin() + (index + 1) * size);
  to->labels.push_back(from.labels[index]);
  ++to->num_examples;
}

}  // namespace

int64_t ClassificationData::example_size() const {
  // Dims come from files: a zero anywhere makes the product 0 without the
  // others overflowing first, and a product past int64 saturates (readers
  // refuse such data; this must only not be undefined).
  for (int64_t d : example_dims) {
    if (d <= 0) return 0;
  }
  int64_t size = 1;
  for (int64_t d : example_dims) {
    if (__builtin_mul_overflow(size, d, &size)) return INT64_MAX;
  }
  return size;
}

absl::StatusOr<ClassificationSplit> SplitTrainValidation(const ClassificationData& data,
                                                         double fraction, uint64_t seed) {
  const int64_t n = data.num_examples;
  const double wanted = std::round(fraction * static_cast<double>(n));
  if (!(fraction > 0 && fraction < 1) || wanted < 1 || wanted > n - 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--validation_fraction=", fraction, " cannot split ", n,
        " examples: both the training and the validation part need at least one"));
  }
  const int64_t num_validation = static_cast<int64_t>(wanted);
  std::vector<int64_t> order = ShuffledRange(n, seed);
  std::vector<char> is_validation(n, 0);
  for (int64_t i = 0; i < num_validation; ++i) is_validation[order[i]] = 1;

  ClassificationSplit split{EmptyLike(data), EmptyLike(data)};
  split.validation.features.reserve(num_validation * data.example_size());
  split.train.features.reserve((n - num_validation) * data.example_size());
  for (int64_t i = 0; i < n; ++i) {
    Append(data, i, is_validation[i] ? &split.validation : &split.train);
  }
  return split;
}

absl::StatusOr<TokenSplit> SplitTokens(const TokenData& data, double fraction,
                                       int64_t min_tokens) {
  const int64_t n = static_cast<int64_t>(data.tokens.size());
  const int64_t num_validation =
      static_cast<int64_t>(std::round(fraction * static_cast<double>(n)));
  if (!(fraction > 0 && fraction < 1) || num_validation < min_tokens ||
      n - num_validation < min_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--validation_fraction=", fraction, " cannot split ", n,
        " tokens so that both parts have at least ", min_tokens, " (seq_len + 1)"));
  }
  TokenSplit split;
  split.train.vocab = split.validation.vocab = data.vocab;
  split.train.tokens.assign(data.tokens.begin(), data.tokens.end() - num_validation);
  split.validation.tokens.assign(data.tokens.end() - num_validation, data.tokens.end());
  return split;
}

void GatherExamples(const ClassificationData& data, const std::vector<int64_t>& indices,
                    std::vector<float>* features, std::vector<int32_t>* labels) {
  const int64_t size = data.example_size();
  features->resize(indices.size() * size);
  labels->resize(indices.size());
  for (size_t b = 0; b < indices.size(); ++b) {
    const int64_t i = indices[b];
    assert(i >= 0 && i < data.num_examples);
    std::copy(data.features.begin() + i * size, data.features.begin() + (i + 1) * size,
              features->begin() + b * size);
    (*labels)[b] = data.labels[i];
  }
}

void GatherTextWindows(const TokenData& data, int64_t seq_len,
                       const std::vector<int64_t>& windows, std::vector<int32_t>* inputs,
                       std::vector<int32_t>* targets) {
  inputs->resize(windows.size() * seq_len);
  targets->resize(windows.size() * seq_len);
  for (size_t b = 0; b < windows.size(); ++b) {
    const int64_t start = windows[b] * seq_len;
    assert(start + seq_len < static_cast<int64_t>(data.tokens.size()));
    std::copy(data.tokens.begin() + start, data.tokens.begin() + start + seq_len,
              inputs->begin() + b * seq_len);
    std::copy(data.tokens.begin() + start + 1, data.tokens.begin() + start + seq_len + 1,
              targets->begin() + b * seq_len);
  }
}

}  // namespace trainer
}  // namespace mnt

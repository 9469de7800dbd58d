#include "trainer/data/sampler.h"

#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mnt {
namespace trainer {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t UniformBelow(uint64_t* state, uint64_t bound) {
  assert(bound >= 1);
  // The high word of x * bound is uniform once the low word's biased region
  // (values below 2^64 mod bound) is rejected.
  unsigned __int128 product = static_cast<unsigned __int128>(SplitMix64(state)) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    while (low < threshold) {
      product = static_cast<unsigned __int128>(SplitMix64(state)) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

std::vector<int64_t> ShuffledRange(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(n > 0 ? n : 0);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  uint64_t state = seed;
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(UniformBelow(&state, static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

BatchSampler::BatchSampler(int64_t num_examples, uint64_t seed)
    : num_examples_(num_examples), seed_(seed) {
  assert(num_examples >= 1);
  StartEpoch();
}

void BatchSampler::StartEpoch() {
  // One SplitMix step decorrelates neighbouring (seed, epoch) pairs.
  uint64_t mix = seed_ ^ (static_cast<uint64_t>(epoch_) * 0xD1B54A32D192ED03ull);
  order_ = ShuffledRange(num_examples_, SplitMix64(&mix));
}

std::vector<int64_t> BatchSampler::NextBatch(int64_t batch_size) {
  std::vector<int64_t> batch;
  batch.reserve(batch_size > 0 ? batch_size : 0);
  while (static_cast<int64_t>(batch.size()) < batch_size) {
    if (cursor_ == num_examples_) {
      ++epoch_;
      cursor_ = 0;
      StartEpoch();
    }
    batch.push_back(order_[cursor_++]);
  }
  return batch;
}

absl::Status BatchSampler::SetState(const SamplerState& state) {
  if (state.epoch < 0 || state.cursor < 0 || state.cursor > num_examples_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampler state (epoch ", state.epoch, ", cursor ", state.cursor,
        ") does not fit a dataset of ", num_examples_, " examples"));
  }
  seed_ = state.seed;
  epoch_ = state.epoch;
  cursor_ = state.cursor;
  StartEpoch();
  return absl::OkStatus();
}

int64_t NumTextWindows(int64_t num_tokens, int64_t seq_len) {
  if (seq_len < 1 || num_tokens < seq_len + 1) return 0;
  return (num_tokens - 1) / seq_len;
}

}  // namespace trainer
}  // namespace mnt

// Deterministic shuffling: a self-contained PRNG (so sequences are the same
// with every standard library) and a resumable epoch-based batch sampler.
#ifndef MANTISSA_TRAINER_DATA_SAMPLER_H_
#define MANTISSA_TRAINER_DATA_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace mnt {
namespace trainer {

// SplitMix64 (Steele, Lea, Flood 2014): advances *state and returns 64 bits.
uint64_t SplitMix64(uint64_t* state);

// Uniform integer in [0, bound) for bound >= 1, without modulo bias
// (Lemire's multiply-and-reject).
uint64_t UniformBelow(uint64_t* state, uint64_t bound);

// 0..n-1 in an order fixed by `seed` (Fisher-Yates with the PRNG above).
std::vector<int64_t> ShuffledRange(int64_t n, uint64_t seed);

// Where a BatchSampler is; saved in checkpoints (CheckpointData.sampler_*).
struct SamplerState {
  uint64_t seed = 0;
  int64_t epoch = 0;   // epochs completed
  int64_t cursor = 0;  // position inside the current epoch's permutation
};

// Hands out example indices in shuffled epochs: epoch e visits every index
// once, in the order ShuffledRange(n, mix(seed, e)). A batch that runs past
// the end of an epoch continues with the next one. Restoring a state gives
// exactly the sequence the saved sampler would have produced.
class BatchSampler {
 public:
  // num_examples >= 1.
  BatchSampler(int64_t num_examples, uint64_t seed);

  // batch_size >= 1 indices in [0, num_examples).
  std::vector<int64_t> NextBatch(int64_t batch_size);

  SamplerState state() const { return {seed_, epoch_, cursor_}; }
  // InvalidArgument if epoch < 0 or cursor is outside [0, num_examples].
  absl::Status SetState(const SamplerState& state);

  int64_t num_examples() const { return num_examples_; }

 private:
  void StartEpoch();

  int64_t num_examples_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t cursor_ = 0;
  std::vector<int64_t> order_;
};

// Text as windows of seq_len + 1 tokens starting at i * seq_len (the last
// token of window i is the first of window i + 1): inputs are the first
// seq_len tokens, targets the next-token shift. Count of complete windows.
int64_t NumTextWindows(int64_t num_tokens, int64_t seq_len);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_SAMPLER_H_

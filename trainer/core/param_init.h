// Deterministic parameter initialisation on the host.
//
// The trainer, not the model, draws initial weights so that every backend
// starts from the same bits for a given seed. The generator and the normal
// transform are written here (not <random>'s distributions, whose output
// differs between standard libraries).
#ifndef MANTISSA_TRAINER_CORE_PARAM_INIT_H_
#define MANTISSA_TRAINER_CORE_PARAM_INIT_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_model.h"

namespace mnt::trainer {

// splitmix64: tiny, fast, and identical on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so log() is safe.
  double NextOpenUnit() {
    return (static_cast<double>(Next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  }

 private:
  uint64_t state_;
};

// Fills `out` (n values) for one parameter. Each parameter gets its own
// stream derived from (seed, index) so adding a parameter does not shift the
// others.
void InitParameter(MNT_ParamInit init, float scale, uint64_t seed,
                   int64_t param_index, int64_t n, std::vector<float>* out);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_PARAM_INIT_H_

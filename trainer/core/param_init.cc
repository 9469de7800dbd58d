#include "trainer/core/param_init.h"

#include <cmath>

namespace mnt::trainer {

void InitParameter(MNT_ParamInit init, float scale, uint64_t seed,
                   int64_t param_index, int64_t n, std::vector<float>* out) {
  out->assign(static_cast<size_t>(n), 0.0f);
  SplitMix64 rng(seed * 0x100000001B3ull + static_cast<uint64_t>(param_index) + 1);
  switch (init) {
    case MNT_PARAM_INIT_ONES:
      out->assign(static_cast<size_t>(n), 1.0f);
      break;
    case MNT_PARAM_INIT_NORMAL:
      // Box-Muller, one value per pair of uniforms (simple and exact enough).
      for (auto& v : *out) {
        const double u1 = rng.NextOpenUnit(), u2 = rng.NextOpenUnit();
        v = static_cast<float>(scale * std::sqrt(-2.0 * std::log(u1)) *
                               std::cos(2.0 * M_PI * u2));
      }
      break;
    case MNT_PARAM_INIT_UNIFORM:
      for (auto& v : *out) {
        v = static_cast<float>(scale * (2.0 * rng.NextOpenUnit() - 1.0));
      }
      break;
    case MNT_PARAM_INIT_ZEROS:
    default:
      break;
  }
}

}  // namespace mnt::trainer

// Reductions: BIAS_GRAD, REDUCE, GLOBAL_NORM_SQUARED and the fused non-finite
// check + unscale. Sums accumulate in double in a fixed order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::BiasGrad(const backend::BiasGradCall& c) {
  const std::vector<float> g = ReadF32(*c.dy);
  std::vector<double> acc(c.n, 0.0);
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t j = 0; j < c.n; ++j) acc[j] += g[r * c.n + j];
  }
  std::vector<float> result = c.accumulate ? ReadF32(*c.db) : std::vector<float>(c.n, 0.0f);
  for (int64_t j = 0; j < c.n; ++j) result[j] += static_cast<float>(acc[j]);
  WriteF32(result.data(), *c.db);
  return Status::Ok();
}

Status CpuBackend::Reduce(const backend::ReduceCall& c) {
  const std::vector<float> v = ReadF32(*c.x);
  double result = 0.0;
  if (c.kind == MNT_REDUCE_MAX) {
    float m = v[0];
    for (float e : v) {
      if (std::isnan(e)) { m = e; break; }  // NaN propagates, as torch.max
      m = std::max(m, e);
    }
    result = m;
  } else {
    for (float e : v) result += e;
    if (c.kind == MNT_REDUCE_MEAN) result /= static_cast<double>(v.size());
  }
  *c.out.f32() = static_cast<float>(result);
  return Status::Ok();
}

Status CpuBackend::GlobalNormSquared(const backend::GlobalNormSquaredCall& c) {
  double sum = 0.0;
  for (const Operand& x : c.inputs) {
    for (float e : ReadF32(*x)) sum += static_cast<double>(e) * e;
  }
  *c.out.f32() = static_cast<float>(sum);
  return Status::Ok();
}

Status CpuBackend::NonfiniteCheckUnscale(const backend::NonfiniteCheckUnscaleCall& c) {
  const float inv = *c.inv_scale.f32();
  bool found = false;
  for (const auto& g : c.gradients) {
    std::vector<float> v = ReadF32(*g.grad);
    for (float& e : v) e = UnscaleAndCheck(e, inv, &found);
    WriteF32(v.data(), *g.out);
  }
  if (found) *c.found_inf.f32() = 1.0f;
  return Status::Ok();
}

}  // namespace mnt::cpu

// Reductions: BIAS_GRAD, REDUCE, GLOBAL_NORM_SQUARED and the fused non-finite
// check + unscale. Sums accumulate in double in a fixed order: threads split
// BIAS_GRAD by columns and GLOBAL_NORM_SQUARED into fixed-size chunks whose
// partial sums are added in order, so results do not depend on the thread
// count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::BiasGrad(const backend::BiasGradCall& c) {
  const std::vector<float> g = ReadF32(*c.dy);
  std::vector<double> acc(c.n, 0.0);
  constexpr int64_t kColumns = 64;  // one thread's block of columns
  const int64_t blocks = (c.n + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (c.rows * c.n > (int64_t{1} << 14))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kColumns, j1 = std::min(c.n, j0 + kColumns);
    double* a = acc.data();
    for (int64_t r = 0; r < c.rows; ++r) {
      const float* row = g.data() + r * c.n;
#pragma omp simd
      for (int64_t j = j0; j < j1; ++j) a[j] += row[j];
    }
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
  constexpr int64_t kChunk = int64_t{1} << 14;
  double sum = 0.0;
  std::vector<float> v;
  std::vector<double> partial;
  for (const Operand& x : c.inputs) {
    v.resize(static_cast<size_t>(sdk::NumElements(*x)));
    ReadF32(*x, v.data());
    const int64_t n = static_cast<int64_t>(v.size());
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    partial.assign(chunks, 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      double s = 0.0;
      const int64_t end = std::min(n, (ch + 1) * kChunk);
      for (int64_t i = ch * kChunk; i < end; ++i) s += static_cast<double>(v[i]) * v[i];
      partial[ch] = s;
    }
    for (double s : partial) sum += s;
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

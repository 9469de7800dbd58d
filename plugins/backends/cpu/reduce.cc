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
#include "plugins/backends/cpu/column_sums.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/backends/cpu/vector_loops.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

void SumColumns(const MNT_Tensor& t, int64_t rows, int64_t cols, double* acc) {
  constexpr int64_t kColumns = 64;  // one thread's stripe of columns
  const int64_t stripes = (cols + kColumns - 1) / kColumns;
  const int threads = ThreadsFor(rows * cols);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t s = 0; s < stripes; ++s) {
    const int64_t j0 = s * kColumns, len = std::min(cols, j0 + kColumns) - j0;
    double a[kColumns] = {};
    float buf[kColumns];
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = InBlock(t, r * cols + j0, len, buf);
      Loops().add_to_sums(row, len, a);
    }
    std::copy(a, a + len, acc + j0);
  }
}

void AddSums(const double* acc, int64_t n, const MNT_Tensor& db, bool accumulate) {
  std::vector<float> result(static_cast<size_t>(n), 0.0f);
  if (accumulate) ReadF32(db, result.data());
  for (int64_t j = 0; j < n; ++j) result[j] += static_cast<float>(acc[j]);
  WriteF32(result.data(), db);
}

Status CpuBackend::BiasGrad(const backend::BiasGradCall& c) {
  std::vector<double> acc(static_cast<size_t>(c.n), 0.0);
  SumColumns(*c.dy, c.rows, c.n, acc.data());
  AddSums(acc.data(), c.n, *c.db, c.accumulate);
  return Status::Ok();
}

Status CpuBackend::Reduce(const backend::ReduceCall& c) {
  // One thread, in element order (a loss or a metric: small).
  const int64_t n = c.n;
  std::vector<float> buf;
  const float* data = InRow(*c.x, 0, n, &buf);  // in place when fp32
  double result = 0.0;
  if (c.kind == MNT_REDUCE_MAX) {
    float m = data[0];
    for (int64_t i = 0; i < n; ++i) {
      const float e = data[i];
      if (std::isnan(e)) { m = e; break; }  // NaN propagates, as torch.max
      m = std::max(m, e);
    }
    result = m;
  } else {
    for (int64_t i = 0; i < n; ++i) result += data[i];
    if (c.kind == MNT_REDUCE_MEAN) result /= static_cast<double>(n);
  }
  *c.out.f32() = static_cast<float>(result);
  return Status::Ok();
}

Status CpuBackend::GlobalNormSquared(const backend::GlobalNormSquaredCall& c) {
  // Fixed-size chunks (each summed block by block by one thread, a block over
  // the vector lanes), their partial sums added in order: the same bits on
  // any thread count.
  constexpr int64_t kChunk = int64_t{1} << 14;
  double sum = 0.0;
  std::vector<double> partial;
  for (const Operand& x : c.inputs) {
    const MNT_Tensor& t = *x;
    const int64_t n = sdk::NumElements(t);
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    partial.assign(chunks, 0.0);
    const int threads = ThreadsFor(n);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      double s = 0.0;
      const int64_t end = std::min(n, (ch + 1) * kChunk);
      float buf[kBlock];
      for (int64_t off = ch * kChunk; off < end; off += kBlock) {
        const int64_t len = std::min(kBlock, end - off);
        s += SumSquaresLoop(InBlock(t, off, len, buf), len);
      }
      partial[ch] = s;
    }
    for (double s : partial) sum += s;
  }
  *c.out.f32() = static_cast<float>(sum);
  return Status::Ok();
}

Status CpuBackend::NonfiniteCheckUnscale(const backend::NonfiniteCheckUnscaleCall& c) {
  const float inv = *c.inv_scale.f32();
  int found = 0;
  for (const auto& g : c.gradients) {
    const MNT_Tensor& in = *g.grad;
    const MNT_Tensor& out = *g.out;
    ForBlocks(g.n, [&](int64_t off, int64_t len) {
      float ibuf[kBlock], obuf[kBlock];
      const float* v = InBlock(in, off, len, ibuf);
      float* o = OutBlock(out, off, obuf);
      bool block_found = false;
      for (int64_t i = 0; i < len; ++i) o[i] = UnscaleAndCheck(v[i], inv, &block_found);
      StoreBlock(o, out, off, len);
      if (block_found) __atomic_store_n(&found, 1, __ATOMIC_RELAXED);
    });
  }
  if (found != 0) *c.found_inf.f32() = 1.0f;
  return Status::Ok();
}

}  // namespace mnt::cpu

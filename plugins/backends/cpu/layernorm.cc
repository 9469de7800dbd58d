// Layer norm over the last dimension (biased variance, as torch), forward
// saving mean/rstd, and backward; since ABI 1.6 also fused with the residual
// add in front of it (forward) and the gradient add behind it (backward).
// Row statistics accumulate in double. Rows run on all threads; the weight
// and bias gradients sum each column over the rows in row order on one
// thread, so every result is the same whatever the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Below this many elements waking the threads costs more than it saves.
constexpr int64_t kParallelElements = int64_t{1} << 14;
// Columns one thread sums for dweight/dbias (a cache-friendly stripe).
constexpr int64_t kColumnStripe = 64;

// y = (x - mean) * rstd * w + b per row of x [rows, c]; mean and rstd saved.
void NormalizeRows(const float* x, int64_t rows, int64_t c, const float* w,
                   const float* b, float epsilon, float* y, float* mean,
                   float* rstd) {
#pragma omp parallel for schedule(static) if (rows * c > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * c;
    double sum = 0.0;
    for (int64_t j = 0; j < c; ++j) sum += row[j];
    const double mu = sum / c;
    double sq = 0.0;
    for (int64_t j = 0; j < c; ++j) sq += (row[j] - mu) * (row[j] - mu);
    const float m = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(sq / c + epsilon));
    for (int64_t j = 0; j < c; ++j) y[r * c + j] = (row[j] - m) * rs * w[j] + b[j];
    mean[r] = m;
    rstd[r] = rs;
  }
}

struct NormOperands {
  const Operand* weight;
  const Operand* bias;
  const Operand* y;
  const Operand* mean;
  const Operand* rstd;
};

// Normalises x (fp32 values, [rows, c]) and writes y, mean and rstd.
void WriteNormalized(const std::vector<float>& x, int64_t rows, int64_t c,
                     float epsilon, const NormOperands& o) {
  const std::vector<float> wv = ReadF32(**o.weight), bv = ReadF32(**o.bias);
  std::vector<float> yv(x.size()), mv(rows), rv(rows);
  NormalizeRows(x.data(), rows, c, wv.data(), bv.data(), epsilon, yv.data(),
                mv.data(), rv.data());
  WriteF32(yv.data(), **o.y);
  WriteF32(mv.data(), **o.mean);
  WriteF32(rv.data(), **o.rstd);
}

// The layer-norm backward shared by LAYERNORM_BACKWARD and (with `dsum`)
// RESIDUAL_LAYERNORM_BACKWARD: dx = dsum + rstd * (dxhat - mean(dxhat) -
// xhat * mean(dxhat * xhat)) with dxhat = dy * w, rounded once on store.
template <typename Call>
Status Backward(const Call& l, const Operand& dsum) {
  const int64_t rows = l.rows, c = l.c;
  const std::vector<float> dyv = ReadF32(*l.dy), xv = ReadF32(*l.x),
                           wv = ReadF32(*l.weight), mv = ReadF32(*l.mean),
                           rv = ReadF32(*l.rstd);
  std::vector<float> dxv = dsum.present() ? ReadF32(*dsum)
                                          : std::vector<float>(xv.size(), 0.0f);
  std::vector<float> xhat(xv.size());
#pragma omp parallel for schedule(static) if (rows * c > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xv.data() + r * c;
    const float* gr = dyv.data() + r * c;
    float* xh = xhat.data() + r * c;
    double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      xh[j] = (xr[j] - mv[r]) * rv[r];
      const float dxhat = gr[j] * wv[j];
      mean_dxhat += dxhat;
      mean_dxhat_xhat += static_cast<double>(dxhat) * xh[j];
    }
    const float a = static_cast<float>(mean_dxhat / c);
    const float bcoef = static_cast<float>(mean_dxhat_xhat / c);
    float* dx = dxv.data() + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const float dxhat = gr[j] * wv[j];
      dx[j] += rv[r] * (dxhat - a - xh[j] * bcoef);
    }
  }
  std::vector<float> dwv(c, 0.0f), dbv(c, 0.0f);
  if (l.accumulate) {
    dwv = ReadF32(*l.dweight);
    dbv = ReadF32(*l.dbias);
  }
  const int64_t stripes = (c + kColumnStripe - 1) / kColumnStripe;
#pragma omp parallel for schedule(static) if (rows * c > kParallelElements)
  for (int64_t s = 0; s < stripes; ++s) {
    const int64_t j0 = s * kColumnStripe, j1 = std::min(c, j0 + kColumnStripe);
    double dw_acc[kColumnStripe] = {}, db_acc[kColumnStripe] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* gr = dyv.data() + r * c;
      const float* xh = xhat.data() + r * c;
      for (int64_t j = j0; j < j1; ++j) {
        dw_acc[j - j0] += static_cast<double>(gr[j]) * xh[j];
        db_acc[j - j0] += gr[j];
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      dwv[j] += static_cast<float>(dw_acc[j - j0]);
      dbv[j] += static_cast<float>(db_acc[j - j0]);
    }
  }
  WriteF32(dxv.data(), *l.dx);
  WriteF32(dwv.data(), *l.dweight);
  WriteF32(dbv.data(), *l.dbias);
  return Status::Ok();
}

}  // namespace

Status CpuBackend::LayerNormForward(const backend::LayerNormForwardCall& l) {
  WriteNormalized(ReadF32(*l.x), l.rows, l.c, l.epsilon,
                  {&l.weight, &l.bias, &l.y, &l.mean, &l.rstd});
  return Status::Ok();
}

Status CpuBackend::LayerNormBackward(const backend::LayerNormBackwardCall& l) {
  return Backward(l, Operand{});
}

Status CpuBackend::ResidualLayerNormForward(
    const backend::ResidualLayerNormForwardCall& l) {
  std::vector<float> sum = ReadF32(*l.x);
  const std::vector<float> r = ReadF32(*l.r);
  float* s = sum.data();
  const int64_t n = static_cast<int64_t>(sum.size());
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
  for (int64_t i = 0; i < n; ++i) s[i] += r[i];
  WriteF32(s, *l.sum);
  // The norm reads the sum as stored (ADD then LAYERNORM_FORWARD's bits).
  if (l.sum->dtype != MNT_DTYPE_F32) ReadF32(*l.sum, s);
  WriteNormalized(sum, l.rows, l.c, l.epsilon,
                  {&l.weight, &l.bias, &l.y, &l.mean, &l.rstd});
  return Status::Ok();
}

Status CpuBackend::ResidualLayerNormBackward(
    const backend::ResidualLayerNormBackwardCall& l) {
  return Backward(l, l.dsum);
}

}  // namespace mnt::cpu

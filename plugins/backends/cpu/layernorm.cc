// Layer norm over the last dimension (biased variance, as torch), forward
// saving mean/rstd, and backward. Row statistics accumulate in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::LayerNormForward(const backend::LayerNormForwardCall& l) {
  const int64_t rows = l.rows, c = l.c;
  const std::vector<float> xv = ReadF32(*l.x), wv = ReadF32(*l.weight),
                           bv = ReadF32(*l.bias);
  std::vector<float> yv(xv.size()), mv(rows), rv(rows);
  // Rows on all threads; each row is one thread's, in a fixed order.
#pragma omp parallel for schedule(static) if (rows * c > (int64_t{1} << 14))
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = xv.data() + r * c;
    double sum = 0.0;
    for (int64_t j = 0; j < c; ++j) sum += row[j];
    const double mu = sum / c;
    double sq = 0.0;
    for (int64_t j = 0; j < c; ++j) sq += (row[j] - mu) * (row[j] - mu);
    const float m = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(sq / c + l.epsilon));
    for (int64_t j = 0; j < c; ++j) {
      yv[r * c + j] = (row[j] - m) * rs * wv[j] + bv[j];
    }
    mv[r] = m;
    rv[r] = rs;
  }
  WriteF32(yv.data(), *l.y);
  WriteF32(mv.data(), *l.mean);
  WriteF32(rv.data(), *l.rstd);
  return Status::Ok();
}

Status CpuBackend::LayerNormBackward(const backend::LayerNormBackwardCall& l) {
  const int64_t rows = l.rows, c = l.c;
  const std::vector<float> dyv = ReadF32(*l.dy), xv = ReadF32(*l.x),
                           wv = ReadF32(*l.weight), mv = ReadF32(*l.mean),
                           rv = ReadF32(*l.rstd);
  std::vector<float> dxv(xv.size());
  std::vector<double> dw_acc(c, 0.0), db_acc(c, 0.0);
  std::vector<float> xhat(c), dxhat(c);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xv.data() + r * c;
    const float* gr = dyv.data() + r * c;
    double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      xhat[j] = (xr[j] - mv[r]) * rv[r];
      dxhat[j] = gr[j] * wv[j];
      mean_dxhat += dxhat[j];
      mean_dxhat_xhat += static_cast<double>(dxhat[j]) * xhat[j];
      dw_acc[j] += static_cast<double>(gr[j]) * xhat[j];
      db_acc[j] += gr[j];
    }
    const float a = static_cast<float>(mean_dxhat / c);
    const float bcoef = static_cast<float>(mean_dxhat_xhat / c);
    for (int64_t j = 0; j < c; ++j) {
      dxv[r * c + j] = rv[r] * (dxhat[j] - a - xhat[j] * bcoef);
    }
  }
  std::vector<float> dwv(c, 0.0f), dbv(c, 0.0f);
  if (l.accumulate) {
    dwv = ReadF32(*l.dweight);
    dbv = ReadF32(*l.dbias);
  }
  for (int64_t j = 0; j < c; ++j) {
    dwv[j] += static_cast<float>(dw_acc[j]);
    dbv[j] += static_cast<float>(db_acc[j]);
  }
  WriteF32(dxv.data(), *l.dx);
  WriteF32(dwv.data(), *l.dweight);
  WriteF32(dbv.data(), *l.dbias);
  return Status::Ok();
}

}  // namespace mnt::cpu

// Layer norm over the last dimension (biased variance, as torch), forward
// saving mean/rstd, and backward. Row statistics accumulate in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

Status CheckRowVector(const OpCall& call, const Operand& t, int64_t length,
                      const char* what) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectDims(t, 1, &length,
                         sdk::Format("[%s=%lld]", what, (long long)length));
}

Status CheckStats(const OpCall& call, const Operand& t, int64_t rows) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  return call.ExpectDims(t, 1, &rows, sdk::Format("f32[N=%lld]", (long long)rows));
}

}  // namespace

Status RunLayerNormForward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 3, 3));
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_LayerNormParams",
                                  MNT_LayerNormParams_STRUCT_SIZE, false, &p));
  Operand x, w, b, y, mean, rstd;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(1, "weight", &w));
  MNT_RETURN_IF_ERROR(call.Input(2, "bias", &b));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.Output(1, "mean", &mean));
  MNT_RETURN_IF_ERROR(call.Output(2, "rstd", &rstd));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  const int64_t rows = Rows(*x), c = LastDim(*x);
  MNT_RETURN_IF_ERROR(CheckRowVector(call, w, c, "C"));
  MNT_RETURN_IF_ERROR(CheckRowVector(call, b, c, "C"));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  MNT_RETURN_IF_ERROR(call.ExpectDims(y, x->rank, x->dims, sdk::Describe(*x)));
  MNT_RETURN_IF_ERROR(CheckStats(call, mean, rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, rstd, rows));
  if (c == 0) return call.Invalid(x.label + " has an empty last dimension");

  const std::vector<float> xv = ReadF32(*x), wv = ReadF32(*w), bv = ReadF32(*b);
  std::vector<float> yv(xv.size()), mv(rows), rv(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = xv.data() + r * c;
    double sum = 0.0;
    for (int64_t j = 0; j < c; ++j) sum += row[j];
    const double mu = sum / c;
    double sq = 0.0;
    for (int64_t j = 0; j < c; ++j) sq += (row[j] - mu) * (row[j] - mu);
    const float m = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(sq / c + p->epsilon));
    for (int64_t j = 0; j < c; ++j) {
      yv[r * c + j] = (row[j] - m) * rs * wv[j] + bv[j];
    }
    mv[r] = m;
    rv[r] = rs;
  }
  WriteF32(yv.data(), *y);
  WriteF32(mv.data(), *mean);
  WriteF32(rv.data(), *rstd);
  return Status::Ok();
}

Status RunLayerNormBackward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 5, 3, 3));
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_LayerNormParams",
                                  MNT_LayerNormParams_STRUCT_SIZE, false, &p));
  Operand dy, x, w, mean, rstd, dx, dw, db;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(2, "weight", &w));
  MNT_RETURN_IF_ERROR(call.Input(3, "mean", &mean));
  MNT_RETURN_IF_ERROR(call.Input(4, "rstd", &rstd));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  MNT_RETURN_IF_ERROR(call.Output(1, "dweight", &dw));
  MNT_RETURN_IF_ERROR(call.Output(2, "dbias", &db));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  const int64_t rows = Rows(*x), c = LastDim(*x);
  for (const Operand* t : {&dy, &dx}) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(*t));
    MNT_RETURN_IF_ERROR(call.ExpectDims(*t, x->rank, x->dims, sdk::Describe(*x)));
  }
  for (const Operand* t : {&w, &dw, &db}) {
    MNT_RETURN_IF_ERROR(CheckRowVector(call, *t, c, "C"));
  }
  MNT_RETURN_IF_ERROR(CheckStats(call, mean, rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, rstd, rows));
  if (c == 0) return call.Invalid(x.label + " has an empty last dimension");

  const std::vector<float> dyv = ReadF32(*dy), xv = ReadF32(*x),
                           wv = ReadF32(*w), mv = ReadF32(*mean),
                           rv = ReadF32(*rstd);
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
  std::vector<float> dwv(c), dbv(c);
  if (p->accumulate) {
    dwv = ReadF32(*dw);
    dbv = ReadF32(*db);
  } else {
    std::fill(dwv.begin(), dwv.end(), 0.0f);
    std::fill(dbv.begin(), dbv.end(), 0.0f);
  }
  for (int64_t j = 0; j < c; ++j) {
    dwv[j] += static_cast<float>(dw_acc[j]);
    dbv[j] += static_cast<float>(db_acc[j]);
  }
  WriteF32(dxv.data(), *dx);
  WriteF32(dwv.data(), *dw);
  WriteF32(dbv.data(), *db);
  return Status::Ok();
}

}  // namespace mnt::cpu

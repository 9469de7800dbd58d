// Layer norm over the last dimension (biased variance, as torch), forward
// saving mean/rstd, and backward; since ABI 1.6 also fused with the residual
// add in front of it (forward) and the gradient add behind it (backward).
// Row statistics accumulate in double (vector_loops.h: the row loops
// compiled per ISA). Each op is one parallel region over
// the tensors' own memory (16-bit rows converted through a per-thread row
// buffer): a row is one thread's, and the weight and bias gradients sum each
// column over the rows in row order on one thread, so every result is the
// same whatever the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/backends/cpu/vector_loops.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Columns one thread sums for dweight/dbias (a cache-friendly stripe).
constexpr int64_t kColumnStripe = 64;

// A [C] parameter as fp32 (in place when it is fp32).
const float* RowVector(const Operand& t, int64_t c, std::vector<float>* buf) {
  return InRow(*t, 0, c, buf);
}

struct NormOperands {
  const Operand* weight;
  const Operand* bias;
  const Operand* y;
  const Operand* mean;
  const Operand* rstd;
};

// A thread's buffers for the 16-bit rows of the norm's input.
struct RowScratch {
  std::vector<float> in, x, r;
};

// Normalises every row that row_of(r, scratch) hands out (fp32 values of the
// norm's input, computed by the thread that normalises them) and writes y,
// mean and rstd.
template <typename RowOf>
void NormalizeRows(int64_t rows, int64_t c, float epsilon, const NormOperands& o,
                   RowOf row_of) {
  std::vector<float> wbuf, bbuf;
  const float* w = RowVector(*o.weight, c, &wbuf);
  const float* b = RowVector(*o.bias, c, &bbuf);
  float* mean = o.mean->f32();
  float* rstd = o.rstd->f32();
  const MNT_Tensor& y = **o.y;
  const int threads = ThreadsFor(rows * c);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    RowScratch scratch;
    std::vector<float> y_buf;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float* yr = OutRow(y, r, c, &y_buf);
      Loops().layer_norm_row(row_of(r, &scratch), c, w, b, epsilon, yr, &mean[r], &rstd[r]);
      if (y.dtype != MNT_DTYPE_F32) WriteF32Range(yr, y, r * c, c);
    }
  }
}

// The layer-norm backward shared by LAYERNORM_BACKWARD and (with `dsum`)
// RESIDUAL_LAYERNORM_BACKWARD: dx = dsum + rstd * (dxhat - mean(dxhat) -
// xhat * mean(dxhat * xhat)) with dxhat = dy * w, rounded once on store.
// One region: column stripes for dweight/dbias (no barrier after them: dx
// aliases neither dy nor x), then rows for dx.
template <typename Call>
Status Backward(const Call& l, const Operand& dsum) {
  const int64_t rows = l.rows, c = l.c;
  const MNT_Tensor& dy = *l.dy;
  const MNT_Tensor& x = *l.x;
  const MNT_Tensor& dx = *l.dx;
  std::vector<float> wbuf;
  const float* w = RowVector(l.weight, c, &wbuf);
  const float* mean = l.mean.f32();
  const float* rstd = l.rstd.f32();
  std::vector<float> dwv(c, 0.0f), dbv(c, 0.0f);
  if (l.accumulate) {
    ReadF32(*l.dweight, dwv.data());
    ReadF32(*l.dbias, dbv.data());
  }
  const int64_t stripes = (c + kColumnStripe - 1) / kColumnStripe;
  const int threads = ThreadsFor(rows * c);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
#pragma omp for schedule(static) nowait
    for (int64_t s = 0; s < stripes; ++s) {
      const int64_t j0 = s * kColumnStripe, len = std::min(c, j0 + kColumnStripe) - j0;
      double dw_acc[kColumnStripe] = {}, db_acc[kColumnStripe] = {};
      float gbuf[kColumnStripe], xbuf[kColumnStripe];
      for (int64_t r = 0; r < rows; ++r) {
        const float* gr = InBlock(dy, r * c + j0, len, gbuf);
        const float* xr = InBlock(x, r * c + j0, len, xbuf);
        Loops().layer_norm_param_grads_row(xr, gr, mean[r], rstd[r], len, dw_acc, db_acc);
      }
      for (int64_t j = 0; j < len; ++j) {
        dwv[j0 + j] += static_cast<float>(dw_acc[j]);
        dbv[j0 + j] += static_cast<float>(db_acc[j]);
      }
    }
    std::vector<float> xbuf, gbuf, sbuf, dbuf;
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = InRow(x, r, c, &xbuf);
      const float* gr = InRow(dy, r, c, &gbuf);
      // dsum is read before dx is written (dx may alias it).
      const float* sr = dsum.present() ? InRow(*dsum, r, c, &sbuf) : nullptr;
      float* out = OutRow(dx, r, c, &dbuf);
      Loops().layer_norm_backward_row(xr, gr, w, sr, mean[r], rstd[r], c, out);
      if (dx.dtype != MNT_DTYPE_F32) WriteF32Range(out, dx, r * c, c);
    }
  }
  WriteF32(dwv.data(), *l.dweight);
  WriteF32(dbv.data(), *l.dbias);
  return Status::Ok();
}

}  // namespace

Status CpuBackend::LayerNormForward(const backend::LayerNormForwardCall& l) {
  const MNT_Tensor& x = *l.x;
  const int64_t c = l.c;
  NormalizeRows(l.rows, c, l.epsilon, {&l.weight, &l.bias, &l.y, &l.mean, &l.rstd},
                [&](int64_t r, RowScratch* s) { return InRow(x, r, c, &s->in); });
  return Status::Ok();
}

Status CpuBackend::LayerNormBackward(const backend::LayerNormBackwardCall& l) {
  return Backward(l, Operand{});
}

Status CpuBackend::ResidualLayerNormForward(
    const backend::ResidualLayerNormForwardCall& l) {
  const MNT_Tensor& x = *l.x;
  const MNT_Tensor& res = *l.r;
  const MNT_Tensor& sum = *l.sum;
  const int64_t c = l.c;
  // Each row's sum is formed, stored, and normalised as stored (ADD then
  // LAYERNORM_FORWARD's bits) by one thread; sum may alias x or r.
  auto row_of = [&](int64_t r, RowScratch* scratch) -> const float* {
    const float* xr = InRow(x, r, c, &scratch->x);
    const float* rr = InRow(res, r, c, &scratch->r);
    float* s = OutRow(sum, r, c, &scratch->in);
    for (int64_t j = 0; j < c; ++j) s[j] = xr[j] + rr[j];
    if (sum.dtype != MNT_DTYPE_F32) {
      WriteF32Range(s, sum, r * c, c);
      ReadF32Range(sum, r * c, c, s);
    }
    return s;
  };
  NormalizeRows(l.rows, c, l.epsilon, {&l.weight, &l.bias, &l.y, &l.mean, &l.rstd}, row_of);
  return Status::Ok();
}

Status CpuBackend::ResidualLayerNormBackward(
    const backend::ResidualLayerNormBackwardCall& l) {
  return Backward(l, l.dsum);
}

}  // namespace mnt::cpu

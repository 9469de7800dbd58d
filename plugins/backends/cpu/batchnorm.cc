// Batch norm (ABI 1.3) over channel dim 1 of x [N, C, ...]: statistics over
// N and the trailing dims, accumulated in double, kept in fp32 in every
// precision (autocast runs batch_norm in fp32). Running statistics follow
// torch: momentum-weighted, the variance unbiased.
#include <cmath>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::BatchNormForward(const backend::BatchNormForwardCall& b) {
  const backend::BatchNormShape& sh = b.shape;
  const bool training = sh.training;
  const std::vector<float> xv = ReadF32(*b.x), gv = ReadF32(*b.gamma),
                           bv = ReadF32(*b.beta);
  std::vector<float> rm = ReadF32(*b.running_mean), rv = ReadF32(*b.running_var);
  std::vector<float> mean(sh.c), invstd(sh.c), yv(xv.size());
  for (int64_t c = 0; c < sh.c; ++c) {
    if (training) {
      double sum = 0.0;
      for (int64_t n = 0; n < sh.n; ++n) {
        const float* v = xv.data() + (n * sh.c + c) * sh.inner;
        for (int64_t i = 0; i < sh.inner; ++i) sum += v[i];
      }
      const double mu = sum / sh.count();
      double sq = 0.0;
      for (int64_t n = 0; n < sh.n; ++n) {
        const float* v = xv.data() + (n * sh.c + c) * sh.inner;
        for (int64_t i = 0; i < sh.inner; ++i) sq += (v[i] - mu) * (v[i] - mu);
      }
      const double var = sq / sh.count();
      mean[c] = static_cast<float>(mu);
      invstd[c] = static_cast<float>(1.0 / std::sqrt(var + sh.epsilon));
      const double m = sh.momentum;
      const double unbiased = sq / (sh.count() - 1);
      rm[c] = static_cast<float>((1.0 - m) * rm[c] + m * mu);
      rv[c] = static_cast<float>((1.0 - m) * rv[c] + m * unbiased);
    } else {
      mean[c] = rm[c];
      invstd[c] = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(rv[c]) + sh.epsilon));
    }
    const float scale = invstd[c] * gv[c];
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = (n * sh.c + c) * sh.inner;
      for (int64_t i = 0; i < sh.inner; ++i) {
        yv[base + i] = (xv[base + i] - mean[c]) * scale + bv[c];
      }
    }
  }
  WriteF32(yv.data(), *b.y);
  if (training) {
    WriteF32(rm.data(), *b.running_mean);
    WriteF32(rv.data(), *b.running_var);
    WriteF32(mean.data(), *b.saved_mean);
    WriteF32(invstd.data(), *b.saved_invstd);
  }
  return Status::Ok();
}

Status CpuBackend::BatchNormBackward(const backend::BatchNormBackwardCall& b) {
  const backend::BatchNormShape& sh = b.shape;
  const std::vector<float> dyv = ReadF32(*b.dy), xv = ReadF32(*b.x),
                           gv = ReadF32(*b.gamma), mv = ReadF32(*b.saved_mean),
                           sv = ReadF32(*b.saved_invstd);
  std::vector<float> dxv(xv.size());
  std::vector<float> dg = b.accumulate ? ReadF32(*b.dgamma)
                                        : std::vector<float>(sh.c, 0.0f);
  std::vector<float> db = b.accumulate ? ReadF32(*b.dbeta)
                                        : std::vector<float>(sh.c, 0.0f);
  const double count = static_cast<double>(sh.count());
  for (int64_t c = 0; c < sh.c; ++c) {
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = (n * sh.c + c) * sh.inner;
      for (int64_t i = 0; i < sh.inner; ++i) {
        const double xhat = (xv[base + i] - mv[c]) * static_cast<double>(sv[c]);
        sum_dy += dyv[base + i];
        sum_dy_xhat += dyv[base + i] * xhat;
      }
    }
    // dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat))
    const double k = static_cast<double>(gv[c]) * sv[c];
    const double mean_dy = sum_dy / count, mean_dy_xhat = sum_dy_xhat / count;
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = (n * sh.c + c) * sh.inner;
      for (int64_t i = 0; i < sh.inner; ++i) {
        const double xhat = (xv[base + i] - mv[c]) * static_cast<double>(sv[c]);
        dxv[base + i] = static_cast<float>(
            k * (dyv[base + i] - mean_dy - xhat * mean_dy_xhat));
      }
    }
    dg[c] += static_cast<float>(sum_dy_xhat);
    db[c] += static_cast<float>(sum_dy);
  }
  WriteF32(dxv.data(), *b.dx);
  WriteF32(dg.data(), *b.dgamma);
  WriteF32(db.data(), *b.dbeta);
  return Status::Ok();
}

}  // namespace mnt::cpu

// Batch norm (ABI 1.3) over channel dim 1 of x [N, C, ...]: statistics over
// N and the trailing dims, accumulated in double, kept in fp32 in every
// precision (autocast runs batch_norm in fp32). Running statistics follow
// torch: momentum-weighted, the variance unbiased.
#include <cmath>
#include <vector>

#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

struct BnShape {
  int64_t n, c, inner;  // x viewed as [n, c, inner]
  int64_t count() const { return n * inner; }
};

Status ReadParams(const OpCall& call, const MNT_BatchNormParams** p) {
  MNT_RETURN_IF_ERROR(call.Params("MNT_BatchNormParams",
                                  MNT_BatchNormParams_STRUCT_SIZE, false, p));
  if (!((*p)->epsilon >= 0.0f) || !((*p)->momentum >= 0.0f) ||
      !((*p)->momentum <= 1.0f)) {
    return call.Invalid(sdk::Format(
        "epsilon %g, momentum %g: expected epsilon >= 0, momentum in [0, 1]",
        (*p)->epsilon, (*p)->momentum));
  }
  return Status::Ok();
}

Status ResolveX(const OpCall& call, const Operand& x, BnShape* sh) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  sh->n = x->dims[0];
  sh->c = x->dims[1];
  sh->inner = 1;
  for (int i = 2; i < x->rank; ++i) sh->inner *= x->dims[i];
  return Status::Ok();
}

Status ExpectChannelVector(const OpCall& call, const Operand& t, int64_t c,
                           bool f32) {
  if (f32) {
    MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  } else {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  }
  return call.ExpectDims(t, 1, &c, sdk::Format("[C=%lld]", (long long)c));
}

Status ExpectLike(const OpCall& call, const Operand& t, const Operand& x) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectDims(t, x->rank, x->dims, sdk::Describe(*x));
}

}  // namespace

Status RunBatchNormForward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 3, 5));
  const MNT_BatchNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  const bool training = p->training != 0;
  Operand x, gamma, beta, y, run_mean, run_var, saved_mean, saved_invstd;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(1, "gamma", &gamma));
  MNT_RETURN_IF_ERROR(call.Input(2, "beta", &beta));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.Output(1, "running_mean", &run_mean));
  MNT_RETURN_IF_ERROR(call.Output(2, "running_var", &run_var));
  if (training) {
    MNT_RETURN_IF_ERROR(call.Output(3, "saved_mean", &saved_mean));
    MNT_RETURN_IF_ERROR(call.Output(4, "saved_invstd", &saved_invstd));
  }
  BnShape sh;
  MNT_RETURN_IF_ERROR(ResolveX(call, x, &sh));
  MNT_RETURN_IF_ERROR(ExpectLike(call, y, x));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, gamma, sh.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, beta, sh.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, run_mean, sh.c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, run_var, sh.c, true));
  if (training) {
    MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_mean, sh.c, true));
    MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_invstd, sh.c, true));
    if (sh.count() < 2) {
      return call.Invalid(x.label + " is " + sdk::Describe(*x) +
                          ": training needs more than one value per channel");
    }
  }
  const std::vector<float> xv = ReadF32(*x), gv = ReadF32(*gamma),
                           bv = ReadF32(*beta);
  std::vector<float> rm = ReadF32(*run_mean), rv = ReadF32(*run_var);
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
      invstd[c] = static_cast<float>(1.0 / std::sqrt(var + p->epsilon));
      const double m = p->momentum;
      const double unbiased = sq / (sh.count() - 1);
      rm[c] = static_cast<float>((1.0 - m) * rm[c] + m * mu);
      rv[c] = static_cast<float>((1.0 - m) * rv[c] + m * unbiased);
    } else {
      mean[c] = rm[c];
      invstd[c] = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(rv[c]) + p->epsilon));
    }
    const float scale = invstd[c] * gv[c];
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = (n * sh.c + c) * sh.inner;
      for (int64_t i = 0; i < sh.inner; ++i) {
        yv[base + i] = (xv[base + i] - mean[c]) * scale + bv[c];
      }
    }
  }
  WriteF32(yv.data(), *y);
  if (training) {
    WriteF32(rm.data(), *run_mean);
    WriteF32(rv.data(), *run_var);
    WriteF32(mean.data(), *saved_mean);
    WriteF32(invstd.data(), *saved_invstd);
  }
  return Status::Ok();
}

Status RunBatchNormBackward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 5, 3, 3));
  const MNT_BatchNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  Operand dy, x, gamma, saved_mean, saved_invstd, dx, dgamma, dbeta;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(2, "gamma", &gamma));
  MNT_RETURN_IF_ERROR(call.Input(3, "saved_mean", &saved_mean));
  MNT_RETURN_IF_ERROR(call.Input(4, "saved_invstd", &saved_invstd));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  MNT_RETURN_IF_ERROR(call.Output(1, "dgamma", &dgamma));
  MNT_RETURN_IF_ERROR(call.Output(2, "dbeta", &dbeta));
  BnShape sh;
  MNT_RETURN_IF_ERROR(ResolveX(call, x, &sh));
  MNT_RETURN_IF_ERROR(ExpectLike(call, dy, x));
  MNT_RETURN_IF_ERROR(ExpectLike(call, dx, x));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, gamma, sh.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, dgamma, sh.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, dbeta, sh.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_mean, sh.c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_invstd, sh.c, true));
  if (sh.count() < 1) return call.Invalid(x.label + " is empty");

  const std::vector<float> dyv = ReadF32(*dy), xv = ReadF32(*x),
                           gv = ReadF32(*gamma), mv = ReadF32(*saved_mean),
                           sv = ReadF32(*saved_invstd);
  std::vector<float> dxv(xv.size());
  std::vector<float> dg = p->accumulate ? ReadF32(*dgamma)
                                        : std::vector<float>(sh.c, 0.0f);
  std::vector<float> db = p->accumulate ? ReadF32(*dbeta)
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
  WriteF32(dxv.data(), *dx);
  WriteF32(dg.data(), *dgamma);
  WriteF32(db.data(), *dbeta);
  return Status::Ok();
}

}  // namespace mnt::cpu

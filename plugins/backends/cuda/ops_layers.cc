// ATTENTION_*, POOL2D_*, BATCHNORM_*: the CPU backend's operand checks
// (same wording), then the layer kernels (layer_kernels.cu); attention runs
// cuDNN SDPA instead where the backend's `attention` option lets it
// (attention_cudnn.cc).
#include <cmath>

#include "plugins/backends/cuda/attention_cudnn.h"
#include "plugins/backends/cuda/ops.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// 48 KiB: the dynamic shared memory a kernel gets without opting in.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

float* F32(const Operand& o) { return static_cast<float*>(o->data); }

// ---- Attention ---------------------------------------------------------------

Status AttentionShape(const OpCall& call, const Operand& qkv,
                      const MNT_AttentionParams& p, AttentionDims* s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(qkv));
  MNT_RETURN_IF_ERROR(call.ExpectRank(qkv, 3));
  if (qkv->dims[2] % 3 != 0) {
    return call.Invalid(sdk::Format("%s is %s, last dimension must be 3*C",
                                    qkv.label.c_str(), sdk::Describe(*qkv).c_str()));
  }
  s->b = qkv->dims[0];
  s->t = qkv->dims[1];
  s->c = qkv->dims[2] / 3;
  if (p.num_heads <= 0 || s->c % p.num_heads != 0) {
    return call.Invalid(sdk::Format("num_heads %d must be positive and divide C=%lld",
                                    p.num_heads, (long long)s->c));
  }
  if (!(p.scale >= 0.0f) || std::isinf(p.scale)) {
    return call.Invalid(
        sdk::Format("scale %g must be finite and >= 0 (0 = 1/sqrt(D))", p.scale));
  }
  s->h = p.num_heads;
  s->d = s->c / s->h;
  s->scale = p.scale != 0.0f ? p.scale
                             : static_cast<float>(1.0 / std::sqrt(double(s->d)));
  s->causal = p.causal != 0;
  return Status::Ok();
}

Status FallbackFits(const OpCall& call, const AttentionDims& s) {
  if (AttentionFallbackSharedBytes(s) <= kDefaultSharedBytes) return Status::Ok();
  return sdk::Unimplemented(sdk::Format(
      "%s: T=%lld, D=%lld needs %zu bytes of shared memory in the cuda "
      "fallback attention kernels (limit %zu)",
      call.op_name(), (long long)s.t, (long long)s.d, AttentionFallbackSharedBytes(s),
      kDefaultSharedBytes));
}

Status ExpectBTC(const OpCall& call, const Operand& t, const AttentionDims& s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[3] = {s.b, s.t, s.c};
  return call.ExpectDims(t, 3, dims,
                         sdk::Format("[B=%lld, T=%lld, C=%lld]", (long long)s.b,
                                     (long long)s.t, (long long)s.c));
}

Status ExpectLse(const OpCall& call, const Operand& t, const AttentionDims& s) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  const int64_t dims[3] = {s.b, s.h, s.t};
  return call.ExpectDims(t, 3, dims,
                         sdk::Format("f32[B=%lld, H=%lld, T=%lld]", (long long)s.b,
                                     (long long)s.h, (long long)s.t));
}

Status AttentionParams(const OpCall& call, const MNT_AttentionParams** p) {
  return call.Params("MNT_AttentionParams", MNT_AttentionParams_STRUCT_SIZE, false, p);
}

// ---- Pooling -------------------------------------------------------------------

Status PoolParams(const OpCall& call, const MNT_Pool2dParams** out) {
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_Pool2dParams", MNT_Pool2dParams_STRUCT_SIZE, false, out));
  const MNT_Pool2dParams& p = **out;
  if (p.kind != MNT_POOL_MAX && p.kind != MNT_POOL_AVG) {
    return call.Invalid(sdk::Format("unknown pool kind %d", static_cast<int>(p.kind)));
  }
  if (p.window_h < 1 || p.window_w < 1 || p.stride_h < 1 || p.stride_w < 1 ||
      p.pad_h < 0 || p.pad_w < 0 || p.pad_h >= p.window_h || p.pad_w >= p.window_w) {
    return call.Invalid(sdk::Format(
        "window %dx%d, stride %dx%d, pad %dx%d: expected window, stride >= 1 "
        "and 0 <= pad < window",
        p.window_h, p.window_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w));
  }
  return Status::Ok();
}

Status PoolShape(const OpCall& call, const MNT_Pool2dParams& p, const Operand& x,
                 const Operand& y, const char* y_name, PoolGeometry* g,
                 int64_t* planes) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRank(x, 4));
  *planes = x->dims[0] * x->dims[1];
  g->h = x->dims[2];
  g->w = x->dims[3];
  const int64_t span_h = g->h + 2 * p.pad_h - p.window_h;
  const int64_t span_w = g->w + 2 * p.pad_w - p.window_w;
  if (span_h < 0 || span_w < 0) {
    return call.Invalid(sdk::Format(
        "the %dx%d window does not fit the padded %lldx%lld input", p.window_h,
        p.window_w, (long long)g->h, (long long)g->w));
  }
  g->p = span_h / p.stride_h + 1;
  g->q = span_w / p.stride_w + 1;
  g->window_h = p.window_h, g->window_w = p.window_w;
  g->stride_h = p.stride_h, g->stride_w = p.stride_w;
  g->pad_h = p.pad_h, g->pad_w = p.pad_w;
  g->count_include_pad = p.count_include_pad;
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  const int64_t dims[4] = {x->dims[0], x->dims[1], g->p, g->q};
  return call.ExpectDims(y, 4, dims,
                         sdk::Format("%s [N, C, P, Q] = [%lld, %lld, %lld, %lld]",
                                     y_name, (long long)dims[0], (long long)dims[1],
                                     (long long)g->p, (long long)g->q));
}

// ---- Batch norm ------------------------------------------------------------------

Status BatchNormParams(const OpCall& call, const MNT_BatchNormParams** p) {
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

Status BatchNormShape(const OpCall& call, const Operand& x,
                      const MNT_BatchNormParams& p, BatchNormDims* d) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  d->n = x->dims[0];
  d->c = x->dims[1];
  d->inner = 1;
  for (int i = 2; i < x->rank; ++i) d->inner *= x->dims[i];
  d->training = p.training != 0;
  d->momentum = p.momentum;
  d->epsilon = p.epsilon;
  return Status::Ok();
}

Status ExpectChannelVector(const OpCall& call, const Operand& t, int64_t c, bool f32) {
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

Status RunAttentionForward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 2, 2));
  const MNT_AttentionParams* p;
  MNT_RETURN_IF_ERROR(AttentionParams(call, &p));
  Operand qkv, y, lse;
  MNT_RETURN_IF_ERROR(call.Input(0, "qkv", &qkv));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.Output(1, "lse", &lse));
  AttentionDims s;
  MNT_RETURN_IF_ERROR(AttentionShape(call, qkv, *p, &s));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, y, s));
  MNT_RETURN_IF_ERROR(ExpectLse(call, lse, s));
  bool ran;
  MNT_RETURN_IF_ERROR(MaybeCudnnAttentionForward(b, call, s, qkv, y, lse, &ran));
  if (ran) return Status::Ok();
  MNT_RETURN_IF_ERROR(FallbackFits(call, s));
  return Launched(call, LaunchAttentionForward(b.stream, s, Dev(qkv), Dev(y), F32(lse)),
                  "attention_forward");
}

Status RunAttentionBackward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(4, 4, 1, 1));
  const MNT_AttentionParams* p;
  MNT_RETURN_IF_ERROR(AttentionParams(call, &p));
  Operand dy, qkv, y, lse, dqkv;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "qkv", &qkv));
  MNT_RETURN_IF_ERROR(call.Input(2, "y", &y));
  MNT_RETURN_IF_ERROR(call.Input(3, "lse", &lse));
  MNT_RETURN_IF_ERROR(call.Output(0, "dqkv", &dqkv));
  AttentionDims s;
  MNT_RETURN_IF_ERROR(AttentionShape(call, qkv, *p, &s));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, dy, s));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, y, s));
  MNT_RETURN_IF_ERROR(ExpectLse(call, lse, s));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dqkv));
  MNT_RETURN_IF_ERROR(call.ExpectDims(dqkv, 3, qkv->dims, sdk::Describe(*qkv)));
  bool ran;
  MNT_RETURN_IF_ERROR(MaybeCudnnAttentionBackward(b, call, s, dy, qkv, y, lse, dqkv, &ran));
  if (ran) return Status::Ok();
  MNT_RETURN_IF_ERROR(FallbackFits(call, s));
  Scratch delta(b);
  MNT_RETURN_IF_ERROR(delta.Allocate(sizeof(float) * s.b * s.h * s.t));
  return Launched(call,
                  LaunchAttentionBackward(b.stream, s, Dev(dy), Dev(qkv), Dev(y),
                                          F32(lse), Dev(dqkv),
                                          static_cast<float*>(delta.data())),
                  "attention_backward");
}

Status RunPool2dForward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_Pool2dParams* prm;
  MNT_RETURN_IF_ERROR(PoolParams(call, &prm));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  PoolGeometry g;
  int64_t planes;
  MNT_RETURN_IF_ERROR(PoolShape(call, *prm, x, y, "y", &g, &planes));
  return Launched(call, LaunchPoolForward(b.stream, g, prm->kind, planes, Dev(x), Dev(y)),
                  "pool_forward");
}

Status RunPool2dBackward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_Pool2dParams* prm;
  MNT_RETURN_IF_ERROR(PoolParams(call, &prm));
  Operand dy, x, dx;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  PoolGeometry g;
  int64_t planes;
  MNT_RETURN_IF_ERROR(PoolShape(call, *prm, x, dy, "dy", &g, &planes));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dx));
  MNT_RETURN_IF_ERROR(call.ExpectDims(dx, 4, x->dims, sdk::Describe(*x)));
  return Launched(call,
                  LaunchPoolBackward(b.stream, g, prm->kind, planes, Dev(dy), Dev(x),
                                     Dev(dx)),
                  "pool_backward");
}

Status RunBatchNormForward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 3, 5));
  const MNT_BatchNormParams* p;
  MNT_RETURN_IF_ERROR(BatchNormParams(call, &p));
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
  BatchNormDims d;
  MNT_RETURN_IF_ERROR(BatchNormShape(call, x, *p, &d));
  MNT_RETURN_IF_ERROR(ExpectLike(call, y, x));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, gamma, d.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, beta, d.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, run_mean, d.c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, run_var, d.c, true));
  if (training) {
    MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_mean, d.c, true));
    MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_invstd, d.c, true));
    if (d.n * d.inner < 2) {
      return call.Invalid(x.label + " is " + sdk::Describe(*x) +
                          ": training needs more than one value per channel");
    }
  }
  // Inference normalises with statistics derived into scratch.
  Scratch stats(b);
  float *mean, *invstd;
  if (training) {
    mean = F32(saved_mean);
    invstd = F32(saved_invstd);
  } else {
    MNT_RETURN_IF_ERROR(stats.Allocate(sizeof(float) * 2 * d.c));
    mean = static_cast<float*>(stats.data());
    invstd = mean + d.c;
  }
  return Launched(call,
                  LaunchBatchNormForward(b.stream, d, Dev(x), Dev(gamma), Dev(beta),
                                         F32(run_mean), F32(run_var), mean, invstd,
                                         Dev(y)),
                  "batchnorm_forward");
}

Status RunBatchNormBackward(CudaBackend& b, const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 5, 3, 3));
  const MNT_BatchNormParams* p;
  MNT_RETURN_IF_ERROR(BatchNormParams(call, &p));
  Operand dy, x, gamma, saved_mean, saved_invstd, dx, dgamma, dbeta;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(2, "gamma", &gamma));
  MNT_RETURN_IF_ERROR(call.Input(3, "saved_mean", &saved_mean));
  MNT_RETURN_IF_ERROR(call.Input(4, "saved_invstd", &saved_invstd));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  MNT_RETURN_IF_ERROR(call.Output(1, "dgamma", &dgamma));
  MNT_RETURN_IF_ERROR(call.Output(2, "dbeta", &dbeta));
  BatchNormDims d;
  MNT_RETURN_IF_ERROR(BatchNormShape(call, x, *p, &d));
  MNT_RETURN_IF_ERROR(ExpectLike(call, dy, x));
  MNT_RETURN_IF_ERROR(ExpectLike(call, dx, x));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, gamma, d.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, dgamma, d.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, dbeta, d.c, false));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_mean, d.c, true));
  MNT_RETURN_IF_ERROR(ExpectChannelVector(call, saved_invstd, d.c, true));
  if (d.n * d.inner < 1) return call.Invalid(x.label + " is empty");
  Scratch sums(b);
  MNT_RETURN_IF_ERROR(sums.Allocate(sizeof(double) * 2 * d.c));
  return Launched(call,
                  LaunchBatchNormBackward(b.stream, d, Dev(dy), Dev(x), Dev(gamma),
                                          F32(saved_mean), F32(saved_invstd), Dev(dx),
                                          Dev(dgamma), Dev(dbeta), p->accumulate != 0,
                                          static_cast<double*>(sums.data())),
                  "batchnorm_backward");
}

}  // namespace mnt::cuda

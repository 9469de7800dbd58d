#include "plugins/backends/common/calls/attention.h"

#include <cmath>

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

Status ReadParams(const OpCall& call, const MNT_AttentionParams** p) {
  return call.Params("MNT_AttentionParams", MNT_AttentionParams_STRUCT_SIZE_1_7, false, p);
}

// The shape from qkv [B, T, 3C] and the params.
Status ResolveShape(const OpCall& call, const Operand& qkv,
                    const MNT_AttentionParams* p, AttentionShape* s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(qkv));
  MNT_RETURN_IF_ERROR(call.ExpectRank(qkv, 3));
  if (qkv->dims[2] % 3 != 0) {
    return call.Invalid(sdk::Format("%s is %s, last dimension must be 3*C",
                                    qkv.label.c_str(), sdk::Describe(*qkv).c_str()));
  }
  s->b = qkv->dims[0];
  s->t = qkv->dims[1];
  s->c = qkv->dims[2] / 3;
  if (p->num_heads <= 0 || s->c % p->num_heads != 0) {
    return call.Invalid(sdk::Format("num_heads %d must be positive and divide C=%lld",
                                    p->num_heads, (long long)s->c));
  }
  if (!(p->scale >= 0.0f) || std::isinf(p->scale)) {
    return call.Invalid(
        sdk::Format("scale %g must be finite and >= 0 (0 = 1/sqrt(D))", p->scale));
  }
  s->h = p->num_heads;
  s->d = s->c / s->h;
  s->scale = p->scale != 0.0f ? p->scale
                              : static_cast<float>(1.0 / std::sqrt(double(s->d)));
  s->causal = p->causal != 0;
  // Absent (a 1.2-1.7 caller) or 0 (a zeroed struct): F32.
  s->compute = MNT_HAS_FIELD(p, MNT_AttentionParams, compute) ? p->compute : MNT_COMPUTE_F32;
  if (s->compute == MNT_COMPUTE_INVALID) s->compute = MNT_COMPUTE_F32;
  if (s->compute != MNT_COMPUTE_F32 && s->compute != MNT_COMPUTE_TF32) {
    return call.Invalid(sdk::Format("compute mode %d: attention's products take F32 or TF32",
                                    static_cast<int>(s->compute)));
  }
  return Status::Ok();
}

Status ExpectBTC(const OpCall& call, const Operand& t, const AttentionShape& s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[3] = {s.b, s.t, s.c};
  return call.ExpectDims(t, 3, dims, [&] {
    return sdk::Format("[B=%lld, T=%lld, C=%lld]", (long long)s.b, (long long)s.t, (long long)s.c);
  });
}

Status ExpectLse(const OpCall& call, const Operand& t, const AttentionShape& s) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  const int64_t dims[3] = {s.b, s.h, s.t};
  return call.ExpectDims(t, 3, dims, [&] {
    return sdk::Format("f32[B=%lld, H=%lld, T=%lld]", (long long)s.b, (long long)s.h,
                       (long long)s.t);
  });
}

}  // namespace

Status CheckAttentionForward(const OpCall& call, AttentionForwardCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 2, 2));
  const MNT_AttentionParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  MNT_RETURN_IF_ERROR(call.Input(0, "qkv", &a->qkv));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &a->y));
  MNT_RETURN_IF_ERROR(call.Output(1, "lse", &a->lse));
  MNT_RETURN_IF_ERROR(ResolveShape(call, a->qkv, p, &a->shape));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, a->y, a->shape));
  return ExpectLse(call, a->lse, a->shape);
}

Status CheckAttentionBackward(const OpCall& call, AttentionBackwardCall* a) {
  a->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(4, 4, 1, 1));
  const MNT_AttentionParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &a->dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "qkv", &a->qkv));
  MNT_RETURN_IF_ERROR(call.Input(2, "y", &a->y));
  MNT_RETURN_IF_ERROR(call.Input(3, "lse", &a->lse));
  MNT_RETURN_IF_ERROR(call.Output(0, "dqkv", &a->dqkv));
  MNT_RETURN_IF_ERROR(ResolveShape(call, a->qkv, p, &a->shape));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, a->dy, a->shape));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, a->y, a->shape));
  MNT_RETURN_IF_ERROR(ExpectLse(call, a->lse, a->shape));
  return call.ExpectFloatLike(a->dqkv, a->qkv);
}

}  // namespace mnt::backend

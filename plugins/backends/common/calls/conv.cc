#include "plugins/backends/common/calls/conv.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

int64_t OutSize(int64_t in, int64_t pad, int64_t dil, int64_t window, int64_t stride) {
  const int64_t span = in + 2 * pad - dil * (window - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

Status ReadParams(const OpCall& call, const MNT_Conv2dParams** p) {
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_Conv2dParams", MNT_Conv2dParams_STRUCT_SIZE, false, p));
  const MNT_Conv2dParams& c = **p;
  if (c.pad_h < 0 || c.pad_w < 0 || c.stride_h < 1 || c.stride_w < 1 ||
      c.dilation_h < 1 || c.dilation_w < 1 || c.groups < 1) {
    return call.Invalid(sdk::Format(
        "pad %dx%d, stride %dx%d, dilation %dx%d, groups %d: expected pad >= "
        "0, stride, dilation and groups >= 1",
        c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
        c.groups));
  }
  const std::optional<MNT_ComputeMode> compute = sdk::ReadEnum(c.compute);
  if (!compute || *compute == MNT_COMPUTE_INVALID) {
    return call.Invalid(sdk::Format("unknown compute mode %d", sdk::RawEnum(c.compute)));
  }
  return Status::Ok();
}

// The shape from x [N,C,H,W] and w [K,C/g,R,S], both checked.
Status ResolveShape(const OpCall& call, const MNT_Conv2dParams& p, const Operand& x,
                    const Operand& w, ConvShape* sh) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRank(x, 4));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(w));
  MNT_RETURN_IF_ERROR(call.ExpectRank(w, 4));
  *sh = ConvShape{};
  sh->n = x->dims[0], sh->c = x->dims[1], sh->h = x->dims[2], sh->w = x->dims[3];
  sh->k = w->dims[0], sh->r = w->dims[2], sh->s = w->dims[3];
  sh->groups = p.groups;
  sh->pad_h = p.pad_h, sh->pad_w = p.pad_w;
  sh->stride_h = p.stride_h, sh->stride_w = p.stride_w;
  sh->dil_h = p.dilation_h, sh->dil_w = p.dilation_w;
  if (sh->c % sh->groups != 0 || sh->k % sh->groups != 0) {
    return call.Invalid(sdk::Format(
        "channels C=%lld and filters K=%lld must divide by groups=%lld",
        (long long)sh->c, (long long)sh->k, (long long)sh->groups));
  }
  sh->cg = sh->c / sh->groups;
  sh->kg = sh->k / sh->groups;
  if (w->dims[1] != sh->cg) {
    return call.Invalid(w.label + " is " + sdk::Describe(*w) +
                        sdk::Format(", expected [K, C/groups=%lld, R, S]",
                                    (long long)sh->cg));
  }
  if (sh->r < 1 || sh->s < 1) return call.Invalid(w.label + " has an empty filter window");
  sh->p = OutSize(sh->h, sh->pad_h, sh->dil_h, sh->r, sh->stride_h);
  sh->q = OutSize(sh->w, sh->pad_w, sh->dil_w, sh->s, sh->stride_w);
  if (sh->p < 1 || sh->q < 1) {
    return call.Invalid(sdk::Format(
        "the %lldx%lld filter (dilation %lldx%lld) does not fit the padded "
        "%lldx%lld input",
        (long long)sh->r, (long long)sh->s, (long long)sh->dil_h,
        (long long)sh->dil_w, (long long)sh->h, (long long)sh->w));
  }
  return Status::Ok();
}

// dy (or y) [N, K, P, Q] of the resolved shape.
Status ExpectOutputShape(const OpCall& call, const Operand& t, const ConvShape& sh) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[4] = {sh.n, sh.k, sh.p, sh.q};
  return call.ExpectDims(t, 4, dims, [&] {
    return sdk::Format("[N, K, P, Q] = [%lld, %lld, %lld, %lld]", (long long)sh.n, (long long)sh.k,
                       (long long)sh.p, (long long)sh.q);
  });
}

Status ExpectBiasShape(const OpCall& call, const Operand& t, const ConvShape& sh) {
  if (!t.present()) return Status::Ok();
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectDims(t, 1, &sh.k, [&] { return sdk::Format("[K=%lld]", (long long)sh.k); });
}

}  // namespace

Status CheckConv2dForward(const OpCall& call, Conv2dForwardCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 3, 1, 1));
  MNT_RETURN_IF_ERROR(ReadParams(call, &c->params));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Input(1, "w", &c->w));
  c->bias = call.OptionalInput(2, "bias");
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &c->y));
  MNT_RETURN_IF_ERROR(ResolveShape(call, *c->params, c->x, c->w, &c->shape));
  MNT_RETURN_IF_ERROR(ExpectOutputShape(call, c->y, c->shape));
  return ExpectBiasShape(call, c->bias, c->shape);
}

Status CheckConv2dBackwardData(const OpCall& call, Conv2dBackwardDataCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  MNT_RETURN_IF_ERROR(ReadParams(call, &c->params));
  c->accumulate = c->params->accumulate != 0;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &c->dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "w", &c->w));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &c->dx));
  MNT_RETURN_IF_ERROR(ResolveShape(call, *c->params, c->dx, c->w, &c->shape));
  return ExpectOutputShape(call, c->dy, c->shape);
}

Status CheckConv2dBackwardFilter(const OpCall& call, Conv2dBackwardFilterCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 2));
  MNT_RETURN_IF_ERROR(ReadParams(call, &c->params));
  c->accumulate = c->params->accumulate != 0;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &c->dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "dw", &c->dw));
  c->dbias = call.OptionalOutput(1, "dbias");
  MNT_RETURN_IF_ERROR(ResolveShape(call, *c->params, c->x, c->dw, &c->shape));
  MNT_RETURN_IF_ERROR(ExpectOutputShape(call, c->dy, c->shape));
  return ExpectBiasShape(call, c->dbias, c->shape);
}

}  // namespace mnt::backend

#include "plugins/backends/common/calls/pool.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

Status ReadParams(const OpCall& call, const MNT_Pool2dParams** out) {
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_Pool2dParams", MNT_Pool2dParams_STRUCT_SIZE, false, out));
  const MNT_Pool2dParams& p = **out;
  const std::optional<MNT_PoolKind> kind = sdk::ReadEnum(p.kind);
  if (!kind || *kind == MNT_POOL_INVALID) {
    return call.Invalid(sdk::Format("unknown pool kind %d", sdk::RawEnum(p.kind)));
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

// The geometry from x [N,C,H,W] and the params; y (the output, or dy) must
// be [N, C, P, Q].
Status Resolve(const OpCall& call, const MNT_Pool2dParams& p, const Operand& x,
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
  return call.ExpectDims(y, 4, dims, [&] {
    return sdk::Format("%s [N, C, P, Q] = [%lld, %lld, %lld, %lld]", y_name, (long long)dims[0],
                       (long long)dims[1], (long long)g->p, (long long)g->q);
  });
}

}  // namespace

Status CheckPool2dForward(const OpCall& call, Pool2dForwardCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_Pool2dParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  c->kind = p->kind;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &c->y));
  return Resolve(call, *p, c->x, c->y, "y", &c->geometry, &c->planes);
}

Status CheckPool2dBackward(const OpCall& call, Pool2dBackwardCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_Pool2dParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  c->kind = p->kind;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &c->dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &c->dx));
  MNT_RETURN_IF_ERROR(Resolve(call, *p, c->x, c->dy, "dy", &c->geometry, &c->planes));
  return call.ExpectFloatLike(c->dx, c->x);
}

}  // namespace mnt::backend

#include "plugins/backends/common/calls/elementwise.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"

#include <cmath>
#include <string>

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

std::string ElementsLikeIn0(int64_t n) {
  return sdk::Format("%lld elements like in[0]", (long long)n);
}

Status GetActivation(const OpCall& call, MNT_Activation* activation) {
  const MNT_ActivationParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_ActivationParams",
                                  MNT_ActivationParams_STRUCT_SIZE, false, &p));
  // Read as int32 first: an unknown value must not be loaded as the enum.
  const std::optional<MNT_Activation> a = sdk::ReadEnum(p->activation);
  if (!a || *a == MNT_ACTIVATION_INVALID) {
    return call.Invalid(sdk::Format("unknown activation %d", sdk::RawEnum(p->activation)));
  }
  *activation = *a;
  return Status::Ok();
}

}  // namespace

Status CheckFill(const OpCall& call, FillCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(0, 0, 1, 1));
  const MNT_FillParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_FillParams", MNT_FillParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &c->out));
  c->value = p->value;
  c->n = sdk::NumElements(*c->out);
  if (c->out->dtype == MNT_DTYPE_I32) {
    const double v = p->value;
    if (!(v == std::floor(v) && v >= -2147483648.0 && v <= 2147483647.0)) {
      return call.Invalid(sdk::Format("value %g does not fit %s exactly", v,
                                      c->out.label.c_str()));
    }
    return Status::Ok();
  }
  return call.ExpectFloat(c->out);
}

Status CheckCast(const OpCall& call, CastCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &c->y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->y));
  c->n = sdk::NumElements(*c->x);
  return call.ExpectElements(c->y, c->n, [&] { return ElementsLikeIn0(c->n); });
}

Status CheckAdd(const OpCall& call, AddCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 2, 1, 1));
  const MNT_AddParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_AddParams", MNT_AddParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(call.Input(0, "a", &c->a));
  c->b = call.OptionalInput(1, "b");
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &c->out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->a));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->out));
  c->n = sdk::NumElements(*c->a);
  MNT_RETURN_IF_ERROR(call.ExpectElements(c->out, c->n, [&] { return ElementsLikeIn0(c->n); }));
  if (c->b.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(c->b));
    MNT_RETURN_IF_ERROR(call.ExpectElements(c->b, c->n, [&] { return ElementsLikeIn0(c->n); }));
  }
  c->alpha = p->alpha;
  c->beta = p->beta;
  return Status::Ok();
}

Status CheckActivationForward(const OpCall& call, ActivationForwardCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  MNT_RETURN_IF_ERROR(GetActivation(call, &c->activation));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &c->y));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->y));
  c->n = sdk::NumElements(*c->x);
  return call.ExpectElements(c->y, c->n, [&] { return ElementsLikeIn0(c->n); });
}

Status CheckActivationBackward(const OpCall& call, ActivationBackwardCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  MNT_RETURN_IF_ERROR(GetActivation(call, &c->activation));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Input(1, "dy", &c->dy));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &c->dx));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->dy));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->dx));
  c->n = sdk::NumElements(*c->x);
  MNT_RETURN_IF_ERROR(call.ExpectElements(c->dy, c->n, [&] { return ElementsLikeIn0(c->n); }));
  return call.ExpectElements(c->dx, c->n, [&] { return ElementsLikeIn0(c->n); });
}

}  // namespace mnt::backend

#include "plugins/backends/common/calls/layernorm.h"

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

namespace {

Status ReadParams(const OpCall& call, const MNT_LayerNormParams** p) {
  return call.Params("MNT_LayerNormParams", MNT_LayerNormParams_STRUCT_SIZE, false, p);
}

// x [..., C] of rank >= 2: sets rows and c.
Status CheckX(const OpCall& call, const Operand& x, int64_t* rows, int64_t* c) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(x, 2));
  *rows = Rows(*x);
  *c = LastDim(*x);
  return Status::Ok();
}

Status CheckRowVector(const OpCall& call, const Operand& t, int64_t c) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  return call.ExpectDims(t, 1, &c, [&] { return sdk::Format("[C=%lld]", (long long)c); });
}

Status CheckStats(const OpCall& call, const Operand& t, int64_t rows) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  return call.ExpectDims(t, 1, &rows, [&] { return sdk::Format("f32[N=%lld]", (long long)rows); });
}

Status CheckNotEmpty(const OpCall& call, const Operand& x, int64_t c) {
  if (c == 0) return call.Invalid(x.label + " has an empty last dimension");
  return Status::Ok();
}

}  // namespace

Status CheckLayerNormForward(const OpCall& call, LayerNormForwardCall* l) {
  l->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 3, 3));
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  l->epsilon = p->epsilon;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &l->x));
  MNT_RETURN_IF_ERROR(call.Input(1, "weight", &l->weight));
  MNT_RETURN_IF_ERROR(call.Input(2, "bias", &l->bias));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &l->y));
  MNT_RETURN_IF_ERROR(call.Output(1, "mean", &l->mean));
  MNT_RETURN_IF_ERROR(call.Output(2, "rstd", &l->rstd));
  MNT_RETURN_IF_ERROR(CheckX(call, l->x, &l->rows, &l->c));
  MNT_RETURN_IF_ERROR(CheckRowVector(call, l->weight, l->c));
  MNT_RETURN_IF_ERROR(CheckRowVector(call, l->bias, l->c));
  MNT_RETURN_IF_ERROR(call.ExpectFloatLike(l->y, l->x));
  MNT_RETURN_IF_ERROR(CheckStats(call, l->mean, l->rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, l->rstd, l->rows));
  return CheckNotEmpty(call, l->x, l->c);
}

namespace {

// in[0..4] and out[0..2] of both backward ops; `x_name` names in[1].
Status CheckBackwardOperands(const OpCall& call, const char* x_name,
                             LayerNormBackwardCall* l) {
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  l->accumulate = p->accumulate != 0;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &l->dy));
  MNT_RETURN_IF_ERROR(call.Input(1, x_name, &l->x));
  MNT_RETURN_IF_ERROR(call.Input(2, "weight", &l->weight));
  MNT_RETURN_IF_ERROR(call.Input(3, "mean", &l->mean));
  MNT_RETURN_IF_ERROR(call.Input(4, "rstd", &l->rstd));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &l->dx));
  MNT_RETURN_IF_ERROR(call.Output(1, "dweight", &l->dweight));
  MNT_RETURN_IF_ERROR(call.Output(2, "dbias", &l->dbias));
  MNT_RETURN_IF_ERROR(CheckX(call, l->x, &l->rows, &l->c));
  for (const Operand* t : {&l->dy, &l->dx}) {
    MNT_RETURN_IF_ERROR(call.ExpectFloatLike(*t, l->x));
  }
  for (const Operand* t : {&l->weight, &l->dweight, &l->dbias}) {
    MNT_RETURN_IF_ERROR(CheckRowVector(call, *t, l->c));
  }
  MNT_RETURN_IF_ERROR(CheckStats(call, l->mean, l->rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, l->rstd, l->rows));
  return CheckNotEmpty(call, l->x, l->c);
}

}  // namespace

Status CheckLayerNormBackward(const OpCall& call, LayerNormBackwardCall* l) {
  l->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 5, 3, 3));
  return CheckBackwardOperands(call, "x", l);
}

Status CheckResidualLayerNormForward(const OpCall& call,
                                     ResidualLayerNormForwardCall* l) {
  l->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(4, 4, 4, 4));
  const MNT_LayerNormParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  l->epsilon = p->epsilon;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &l->x));
  MNT_RETURN_IF_ERROR(call.Input(1, "r", &l->r));
  MNT_RETURN_IF_ERROR(call.Input(2, "weight", &l->weight));
  MNT_RETURN_IF_ERROR(call.Input(3, "bias", &l->bias));
  MNT_RETURN_IF_ERROR(call.Output(0, "sum", &l->sum));
  MNT_RETURN_IF_ERROR(call.Output(1, "y", &l->y));
  MNT_RETURN_IF_ERROR(call.Output(2, "mean", &l->mean));
  MNT_RETURN_IF_ERROR(call.Output(3, "rstd", &l->rstd));
  MNT_RETURN_IF_ERROR(CheckX(call, l->x, &l->rows, &l->c));
  for (const Operand* t : {&l->r, &l->sum, &l->y}) {
    MNT_RETURN_IF_ERROR(call.ExpectFloatLike(*t, l->x));
  }
  MNT_RETURN_IF_ERROR(CheckRowVector(call, l->weight, l->c));
  MNT_RETURN_IF_ERROR(CheckRowVector(call, l->bias, l->c));
  MNT_RETURN_IF_ERROR(CheckStats(call, l->mean, l->rows));
  MNT_RETURN_IF_ERROR(CheckStats(call, l->rstd, l->rows));
  return CheckNotEmpty(call, l->x, l->c);
}

Status CheckResidualLayerNormBackward(const OpCall& call,
                                      ResidualLayerNormBackwardCall* l) {
  l->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(5, 6, 3, 3));
  MNT_RETURN_IF_ERROR(CheckBackwardOperands(call, "sum", l));
  l->dsum = call.OptionalInput(5, "dsum");
  if (l->dsum.present()) return call.ExpectFloatLike(l->dsum, l->x);
  return Status::Ok();
}

}  // namespace mnt::backend

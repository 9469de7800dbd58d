#include "plugins/backends/common/calls/reduce.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"

#include <cstdint>

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

using sdk::Status;

Status CheckBiasGrad(const OpCall& call, BiasGradCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_AccumulateParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_AccumulateParams",
                                  MNT_AccumulateParams_STRUCT_SIZE, true, &p));
  c->accumulate = p != nullptr && p->accumulate;
  MNT_RETURN_IF_ERROR(call.Input(0, "dY", &c->dy));
  MNT_RETURN_IF_ERROR(call.Output(0, "db", &c->db));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->dy));
  MNT_RETURN_IF_ERROR(call.ExpectRankAtLeast(c->dy, 1));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->db));
  c->rows = Rows(*c->dy);
  c->n = LastDim(*c->dy);
  return call.ExpectDims(c->db, 1, &c->n, [&] { return sdk::Format("[N=%lld]", (long long)c->n); });
}

Status CheckReduce(const OpCall& call, ReduceCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_ReduceParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_ReduceParams", MNT_ReduceParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &c->out));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->out));
  const std::optional<MNT_ReduceKind> kind = sdk::ReadEnum(p->kind);
  if (!kind || *kind == MNT_REDUCE_INVALID) {
    return call.Invalid(sdk::Format("unknown reduce kind %d", sdk::RawEnum(p->kind)));
  }
  c->kind = *kind;
  c->n = sdk::NumElements(*c->x);
  if (c->n == 0 && c->kind != MNT_REDUCE_SUM) {
    return call.Invalid(c->x.label + " is empty; only SUM reduces nothing");
  }
  return Status::Ok();
}

Status CheckGlobalNormSquared(const OpCall& call, GlobalNormSquaredCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, SIZE_MAX, 1, 1));
  MNT_RETURN_IF_ERROR(call.Output(0, "out", &c->out));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->out));
  c->inputs.resize(call.num_inputs());
  for (size_t i = 0; i < call.num_inputs(); ++i) {
    MNT_RETURN_IF_ERROR(call.Input(i, "x", &c->inputs[i]));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(c->inputs[i]));
  }
  return Status::Ok();
}

Status CheckNonfiniteCheckUnscale(const OpCall& call, NonfiniteCheckUnscaleCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, SIZE_MAX, 1, SIZE_MAX));
  if (call.num_outputs() != call.num_inputs()) {
    return call.Invalid(sdk::Format(
        "got %zu inputs and %zu outputs, expected as many outputs as inputs "
        "(found_inf + one per gradient)",
        call.num_inputs(), call.num_outputs()));
  }
  MNT_RETURN_IF_ERROR(call.Input(0, "inv_scale", &c->inv_scale));
  MNT_RETURN_IF_ERROR(call.Output(0, "found_inf", &c->found_inf));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->inv_scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->found_inf));
  c->gradients.resize(call.num_inputs() - 1);
  for (size_t i = 1; i < call.num_inputs(); ++i) {
    NonfiniteCheckUnscaleCall::Gradient& g = c->gradients[i - 1];
    MNT_RETURN_IF_ERROR(call.Input(i, "grad", &g.grad));
    MNT_RETURN_IF_ERROR(call.Output(i, "unscaled", &g.out));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(g.grad));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(g.out));
    g.n = sdk::NumElements(*g.grad);
    MNT_RETURN_IF_ERROR(call.ExpectElements(
        g.out, g.n, [&] { return sdk::Format("%lld elements like in[%zu]", (long long)g.n, i); }));
  }
  return Status::Ok();
}

}  // namespace mnt::backend

#include "plugins/backends/common/calls/fp8.h"

#include "plugins/sdk/tensor.h"

namespace mnt::backend {
namespace {

sdk::Status ExpectFp8(const OpCall& call, const Operand& t) {
  if (sdk::IsFp8(t->dtype)) return sdk::Status::Ok();
  return call.Invalid(t.label + " is " + sdk::Describe(*t) + ", expected f8_e4m3 or f8_e5m2");
}

}  // namespace

sdk::Status CheckScaledCast(const OpCall& call, ScaledCastCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 2));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Input(1, "scale", &c->scale));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->scale));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &c->y));
  c->quantize = sdk::IsFp8(c->y->dtype);
  if (c->quantize) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  } else {
    MNT_RETURN_IF_ERROR(ExpectFp8(call, c->x));
    MNT_RETURN_IF_ERROR(call.ExpectFloat(c->y));
  }
  c->n = sdk::NumElements(*c->x);
  MNT_RETURN_IF_ERROR(call.ExpectElements(
      c->y, c->n, [&] { return sdk::Format("%lld elements (as x)", (long long)c->n); }));
  if (c->x->data == c->y->data) return call.Invalid(c->y.label + " aliases " + c->x.label);
  c->amax = call.OptionalOutput(1, "amax");
  if (c->amax.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(c->amax));
  return sdk::Status::Ok();
}

sdk::Status CheckScaledGemm(const OpCall& call, ScaledGemmCall* g) {
  g->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(4, 5, 1, 2));
  MNT_RETURN_IF_ERROR(call.Params("MNT_ScaledGemmParams", MNT_ScaledGemmParams_STRUCT_SIZE,
                                  false, &g->params));
  g->trans_a = g->params->trans_a != 0;
  g->trans_b = g->params->trans_b != 0;
  MNT_RETURN_IF_ERROR(call.Input(0, "A", &g->a));
  MNT_RETURN_IF_ERROR(call.Input(1, "B", &g->b));
  MNT_RETURN_IF_ERROR(call.Input(2, "scale_inv_a", &g->scale_inv_a));
  MNT_RETURN_IF_ERROR(call.Input(3, "scale_inv_b", &g->scale_inv_b));
  MNT_RETURN_IF_ERROR(call.Output(0, "D", &g->d));
  MNT_RETURN_IF_ERROR(ExpectFp8(call, g->a));
  MNT_RETURN_IF_ERROR(ExpectFp8(call, g->b));
  if (g->a->dtype == MNT_DTYPE_F8_E5M2 && g->b->dtype == MNT_DTYPE_F8_E5M2) {
    return call.Invalid("A and B are both f8_e5m2 (one must be f8_e4m3)");
  }
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(g->scale_inv_a));
  MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(g->scale_inv_b));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(g->d));
  for (const Operand* o : {&g->a, &g->b, &g->d}) MNT_RETURN_IF_ERROR(call.ExpectRank(*o, 2));
  const int64_t m = g->trans_a ? g->a->dims[1] : g->a->dims[0];
  const int64_t k = g->trans_a ? g->a->dims[0] : g->a->dims[1];
  const int64_t n = g->trans_b ? g->b->dims[0] : g->b->dims[1];
  const int64_t b_k = g->trans_b ? g->b->dims[1] : g->b->dims[0];
  if (b_k != k) {
    return call.Invalid(g->b.label + " is " + sdk::Describe(*g->b) + ", expected " +
                        (g->trans_b ? sdk::Format("[N, K=%lld]", (long long)k)
                                    : sdk::Format("[K=%lld, N]", (long long)k)));
  }
  const int64_t d_dims[2] = {m, n};
  MNT_RETURN_IF_ERROR(call.ExpectDims(g->d, 2, d_dims, [&] {
    return sdk::Format("[M=%lld, N=%lld]", (long long)m, (long long)n);
  }));
  g->m = m;
  g->n = n;
  g->k = k;
  g->bias = call.OptionalInput(4, "bias");
  if (g->bias.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(g->bias));
    MNT_RETURN_IF_ERROR(call.ExpectDims(g->bias, 1, &g->n, [&] {
      return sdk::Format("[N=%lld]", (long long)n);
    }));
  }
  g->amax = call.OptionalOutput(1, "amax");
  if (g->amax.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(g->amax));
  return sdk::Status::Ok();
}

}  // namespace mnt::backend

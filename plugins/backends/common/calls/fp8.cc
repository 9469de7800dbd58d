#include "plugins/backends/common/calls/fp8.h"

#include <cmath>
#include <cstdint>
#include <optional>

#include "plugins/sdk/abi_enum.h"
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
  if (g->bias.present()) MNT_RETURN_IF_ERROR(call.ExpectFloatVector(g->bias, n, "N"));
  g->amax = call.OptionalOutput(1, "amax");
  if (g->amax.present()) MNT_RETURN_IF_ERROR(call.ExpectF32Scalar(g->amax));
  return sdk::Status::Ok();
}

sdk::Status CheckFp8ScaleUpdate(const OpCall& call, Fp8ScaleUpdateCall* u) {
  u->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 3, 3));
  const MNT_Fp8ScaleUpdateParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_Fp8ScaleUpdateParams",
                                  MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, false, &p));
  u->params = p;
  if (!(p->fp8_max > 0.0f) || !std::isfinite(p->fp8_max)) {
    return call.Invalid(sdk::Format("fp8_max %g must be finite and > 0 (448 for f8_e4m3, "
                                    "57344 for f8_e5m2)",
                                    static_cast<double>(p->fp8_max)));
  }
  if (p->margin < 0) return call.Invalid(sdk::Format("margin %d must be >= 0", p->margin));
  const std::optional<MNT_AmaxAlgo> algo = sdk::ReadEnum(p->amax_algo);
  if (!algo || *algo == MNT_AMAX_ALGO_INVALID) {
    return call.Invalid(sdk::Format("amax_algo %d must be MNT_AMAX_ALGO_MAX (1) or "
                                    "MNT_AMAX_ALGO_MOST_RECENT (2)",
                                    sdk::RawEnum(p->amax_algo)));
  }
  u->fp8_max = p->fp8_max;
  u->margin = p->margin;
  u->most_recent = *algo == MNT_AMAX_ALGO_MOST_RECENT;
  MNT_RETURN_IF_ERROR(call.Input(0, "amax", &u->amax));
  MNT_RETURN_IF_ERROR(call.Output(0, "history", &u->history));
  MNT_RETURN_IF_ERROR(call.Output(1, "scale", &u->scale));
  MNT_RETURN_IF_ERROR(call.Output(2, "scale_inv", &u->scale_inv));
  // amax fixes N; the others are checked against it.
  if (u->amax->dtype != MNT_DTYPE_F32 || u->amax->rank != 1) {
    return call.Invalid(u->amax.label + " is " + sdk::Describe(*u->amax) +
                        ", expected f32[N] (rank 1)");
  }
  u->n = u->amax->dims[0];
  const int64_t n = u->n;
  if (u->history->dtype != MNT_DTYPE_F32 || u->history->rank != 2 ||
      u->history->dims[1] != n || u->history->dims[0] < 1) {
    return call.Invalid(u->history.label + " is " + sdk::Describe(*u->history) +
                        sdk::Format(", expected f32[H, N=%lld] with H >= 1", (long long)n));
  }
  u->rows = u->history->dims[0];
  for (const Operand* o : {&u->scale, &u->scale_inv}) {
    if ((*o)->dtype != MNT_DTYPE_F32 || (*o)->rank != 1 || (*o)->dims[0] != n) {
      return call.Invalid(o->label + " is " + sdk::Describe(**o) +
                          sdk::Format(", expected f32[N=%lld]", (long long)n));
    }
  }
  if (p->history_length < 1 || p->history_length > u->rows) {
    return call.Invalid(sdk::Format("history_length %d must be in [1, H=%lld] (out[0] "
                                    "history is %s)",
                                    p->history_length, (long long)u->rows,
                                    sdk::Describe(*u->history).c_str()));
  }
  u->history_length = p->history_length;
  // Every tensor's values are read and written by one thread in any order:
  // no two operands may share bytes.
  return CheckNoOverlap(*u, {&u->amax, &u->history, &u->scale, &u->scale_inv});
}

}  // namespace mnt::backend

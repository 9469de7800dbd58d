#include "plugins/backends/common/calls/gemm.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {

namespace {

// A known, valid compute mode. `raw` is the params field itself, taken by
// reference: copying an unchecked value into an MNT_ComputeMode is already
// undefined behaviour (UBSan's enum check) when the caller sent garbage.
sdk::Status CheckCompute(const OpCall& call, const MNT_ComputeMode& raw,
                         MNT_ComputeMode* out) {
  const std::optional<MNT_ComputeMode> compute = sdk::ReadEnum(raw);
  if (!compute || *compute == MNT_COMPUTE_INVALID) {
    return call.Invalid(sdk::Format("unknown compute mode %d", sdk::RawEnum(raw)));
  }
  *out = *compute;
  return sdk::Status::Ok();
}

// in[0] A, in[1] B and out[0] `c_name`: float, rank 2, inner dims agree,
// C is [M, N]. Sets m, n, k.
sdk::Status CheckProductShapes(const OpCall& call, bool ta, bool tb,
                               const char* c_name, Operand* a, Operand* b,
                               Operand* c, int64_t* m_out, int64_t* n_out,
                               int64_t* k_out) {
  MNT_RETURN_IF_ERROR(call.Input(0, "A", a));
  MNT_RETURN_IF_ERROR(call.Input(1, "B", b));
  MNT_RETURN_IF_ERROR(call.Output(0, c_name, c));
  for (const Operand* o : {a, b, c}) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(*o));
    MNT_RETURN_IF_ERROR(call.ExpectRank(*o, 2));
  }
  const int64_t m = ta ? (*a)->dims[1] : (*a)->dims[0];
  const int64_t k = ta ? (*a)->dims[0] : (*a)->dims[1];
  const int64_t n = tb ? (*b)->dims[0] : (*b)->dims[1];
  const int64_t b_k = tb ? (*b)->dims[1] : (*b)->dims[0];
  if (b_k != k) {
    return call.Invalid(b->label + " is " + sdk::Describe(**b) + ", expected " +
                        (tb ? sdk::Format("[N, K=%lld]", (long long)k)
                            : sdk::Format("[K=%lld, N]", (long long)k)));
  }
  const int64_t c_dims[2] = {m, n};
  MNT_RETURN_IF_ERROR(call.ExpectDims(*c, 2, c_dims, [&] {
    return sdk::Format("[M=%lld, N=%lld]", (long long)m, (long long)n);
  }));
  *m_out = m;
  *n_out = n;
  *k_out = k;
  return sdk::Status::Ok();
}

// The product part of a fused-epilogue GEMM from its params' fields.
sdk::Status CheckProduct(const OpCall& call, int32_t trans_a, int32_t trans_b,
                         float alpha, float beta, const MNT_ComputeMode& compute,
                         const char* c_name, bool beta_allowed,
                         GemmProduct* g) {
  MNT_RETURN_IF_ERROR(CheckCompute(call, compute, &g->compute));
  if (!beta_allowed && beta != 0.0f) {
    return call.Invalid(sdk::Format(
        "beta is %g; this op overwrites its outputs (beta must be 0)", beta));
  }
  g->trans_a = trans_a != 0;
  g->trans_b = trans_b != 0;
  g->alpha = alpha;
  g->beta = beta;
  return CheckProductShapes(call, g->trans_a, g->trans_b, c_name, &g->a, &g->b,
                            &g->c, &g->m, &g->n, &g->k);
}

// A float vector of `length` elements.

}  // namespace

sdk::Status CheckGemm(const OpCall& call, GemmCall* g) {
  g->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 3, 1, 1));
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_GemmParams", MNT_GemmParams_STRUCT_SIZE, false, &g->params));
  const MNT_GemmParams* p = g->params;
  MNT_ComputeMode compute;
  MNT_RETURN_IF_ERROR(CheckCompute(call, p->compute, &compute));
  g->trans_a = p->trans_a != 0;
  g->trans_b = p->trans_b != 0;
  MNT_RETURN_IF_ERROR(CheckProductShapes(call, g->trans_a, g->trans_b, "C",
                                         &g->a, &g->b, &g->c, &g->m, &g->n,
                                         &g->k));
  g->bias = call.OptionalInput(2, "bias");
  if (g->bias.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloatVector(g->bias, g->n, "N"));
  }
  return sdk::Status::Ok();
}

sdk::Status CheckGemmBiasGelu(const OpCall& call, GemmBiasGeluCall* g) {
  g->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 2, 2));
  const MNT_GemmParams* p;
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_GemmParams", MNT_GemmParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(CheckProduct(call, p->trans_a, p->trans_b, p->alpha,
                                   p->beta, p->compute, "y", false, g));
  MNT_RETURN_IF_ERROR(call.Input(2, "bias", &g->bias));
  MNT_RETURN_IF_ERROR(call.ExpectFloatVector(g->bias, g->n, "N"));
  MNT_RETURN_IF_ERROR(call.Output(1, "pre", &g->pre));
  return call.ExpectFloatLike(g->pre, g->c);
}

sdk::Status CheckGemmDgelu(const OpCall& call, GemmDgeluCall* g) {
  g->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(3, 3, 1, 2));
  const MNT_GemmEpilogueParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_GemmEpilogueParams",
                                  MNT_GemmEpilogueParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(CheckProduct(call, p->trans_a, p->trans_b, p->alpha,
                                   p->beta, p->compute, "dpre", false, g));
  MNT_RETURN_IF_ERROR(call.Input(2, "pre", &g->pre));
  MNT_RETURN_IF_ERROR(call.ExpectFloatLike(g->pre, g->c));
  if (g->pre->data == g->c->data) {
    return call.Invalid(g->c.label + " aliases " + g->pre.label +
                        " (the epilogue reads pre while writing dpre)");
  }
  g->dbias = call.OptionalOutput(1, "dbias");
  if (g->dbias.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloatVector(g->dbias, g->n, "N"));
  }
  g->accumulate_bias_grad = p->accumulate_bias_grad != 0;
  return sdk::Status::Ok();
}

sdk::Status CheckGemmBiasGrad(const OpCall& call, GemmBiasGradCall* g) {
  g->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 2, 2));
  const MNT_GemmEpilogueParams* p;
  MNT_RETURN_IF_ERROR(call.Params("MNT_GemmEpilogueParams",
                                  MNT_GemmEpilogueParams_STRUCT_SIZE, false, &p));
  MNT_RETURN_IF_ERROR(CheckProduct(call, p->trans_a, p->trans_b, p->alpha,
                                   p->beta, p->compute, "C", true, g));
  MNT_RETURN_IF_ERROR(call.Output(1, "dbias", &g->dbias));
  MNT_RETURN_IF_ERROR(call.ExpectFloatVector(g->dbias, g->m, "M"));
  g->accumulate_bias_grad = p->accumulate_bias_grad != 0;
  return sdk::Status::Ok();
}

GemmCall PlainGemmOf(const OpCall* op, const GemmProduct& g, const Operand& bias,
                     float beta, const Operand& out, MNT_GemmParams* params) {
  *params = MNT_GemmParams{};
  params->struct_size = MNT_GemmParams_STRUCT_SIZE;
  params->trans_a = g.trans_a ? 1 : 0;
  params->trans_b = g.trans_b ? 1 : 0;
  params->alpha = g.alpha;
  params->beta = beta;
  params->compute = g.compute;
  GemmCall gemm;
  gemm.op = op;
  gemm.params = params;
  gemm.a = g.a;
  gemm.b = g.b;
  gemm.bias = bias;
  gemm.c = out;
  gemm.trans_a = g.trans_a;
  gemm.trans_b = g.trans_b;
  gemm.m = g.m;
  gemm.n = g.n;
  gemm.k = g.k;
  return gemm;
}

}  // namespace mnt::backend

#include "plugins/backends/common/calls/gemm.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {

sdk::Status CheckGemm(const OpCall& call, GemmCall* g) {
  g->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 3, 1, 1));
  MNT_RETURN_IF_ERROR(
      call.Params("MNT_GemmParams", MNT_GemmParams_STRUCT_SIZE, false, &g->params));
  const MNT_GemmParams* p = g->params;
  const std::optional<MNT_ComputeMode> compute = sdk::ReadEnum(p->compute);
  if (!compute || *compute == MNT_COMPUTE_INVALID) {
    return call.Invalid(sdk::Format("unknown compute mode %d", sdk::RawEnum(p->compute)));
  }
  MNT_RETURN_IF_ERROR(call.Input(0, "A", &g->a));
  MNT_RETURN_IF_ERROR(call.Input(1, "B", &g->b));
  g->bias = call.OptionalInput(2, "bias");
  MNT_RETURN_IF_ERROR(call.Output(0, "C", &g->c));
  for (const Operand* o : {&g->a, &g->b, &g->c}) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(*o));
    MNT_RETURN_IF_ERROR(call.ExpectRank(*o, 2));
  }
  const bool ta = p->trans_a != 0, tb = p->trans_b != 0;
  const Operand& a = g->a;
  const Operand& b = g->b;
  const int64_t m = ta ? a->dims[1] : a->dims[0];
  const int64_t k = ta ? a->dims[0] : a->dims[1];
  const int64_t n = tb ? b->dims[0] : b->dims[1];
  const int64_t b_k = tb ? b->dims[1] : b->dims[0];
  if (b_k != k) {
    return call.Invalid(b.label + " is " + sdk::Describe(*b) + ", expected " +
                        (tb ? sdk::Format("[N, K=%lld]", (long long)k)
                            : sdk::Format("[K=%lld, N]", (long long)k)));
  }
  const int64_t c_dims[2] = {m, n};
  MNT_RETURN_IF_ERROR(call.ExpectDims(g->c, 2, c_dims, [&] {
    return sdk::Format("[M=%lld, N=%lld]", (long long)m, (long long)n);
  }));
  if (g->bias.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(g->bias));
    MNT_RETURN_IF_ERROR(
        call.ExpectDims(g->bias, 1, &n, [&] { return sdk::Format("[N=%lld]", (long long)n); }));
  }
  g->trans_a = ta;
  g->trans_b = tb;
  g->m = m;
  g->n = n;
  g->k = k;
  return sdk::Status::Ok();
}

}  // namespace mnt::backend

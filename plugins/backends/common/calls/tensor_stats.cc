#include "plugins/backends/common/calls/tensor_stats.h"

#include <cstdint>

#include "plugins/sdk/tensor.h"

namespace mnt::backend {

sdk::Status CheckTensorStats(const OpCall& call, TensorStatsCall* c) {
  c->op = &call;
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 2, 2));
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &c->x));
  MNT_RETURN_IF_ERROR(call.Output(0, "range", &c->range));
  MNT_RETURN_IF_ERROR(call.Output(1, "counts", &c->counts));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(c->x));
  if (c->range->dtype != MNT_DTYPE_F32 || c->range->rank != 1 || c->range->dims[0] != 2) {
    return call.Invalid(c->range.label + " is " + sdk::Describe(*c->range) +
                        ", expected f32[2] (smallest and largest finite |x|)");
  }
  if (c->counts->dtype != MNT_DTYPE_I32 || c->counts->rank != 1 || c->counts->dims[0] != 2) {
    return call.Invalid(c->counts.label + " is " + sdk::Describe(*c->counts) +
                        ", expected i32[2] (inf-or-NaN and NaN counts)");
  }
  c->n = sdk::NumElements(*c->x);
  // A kernel may write an output while other threads still read x, and
  // writes both outputs: no two operands may share bytes.
  return CheckNoOverlap(*c, {&c->x, &c->range, &c->counts});
}

}  // namespace mnt::backend

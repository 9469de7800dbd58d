// The contract of TENSOR_STATS (ABI 1.10; semantics: plugins/abi/
// mnt_backend.h), checked once for every backend.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_TENSOR_STATS_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_TENSOR_STATS_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// range F32 [2] = {min, max} of |x| over x's finite elements (both 0 when
// none is), counts I32 [2] = {inf or NaN, NaN} (saturating at INT32_MAX),
// x F32/F16/BF16 of any shape. Per element and to combine partial results:
// common/tensor_stats_math.h. No two operands share bytes. Params ignored.
struct TensorStatsCall : TypedCall {
  Operand x, range, counts;
  int64_t n = 0;  // elements of x (0 gives {0, 0} and {0, 0})
};
sdk::Status CheckTensorStats(const OpCall& call, TensorStatsCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_TENSOR_STATS_H_

// The contracts of BATCHNORM_FORWARD/BACKWARD (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. x [N, C, ...]
// is viewed as [n, c, inner]; statistics run over n and inner.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_BATCHNORM_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_BATCHNORM_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// Sizes and settings of one batch-norm call; plain data, so kernels take it
// by value.
struct BatchNormShape {
  int64_t n, c, inner;
  bool training;
  float momentum, epsilon;
  int64_t count() const { return n * inner; }  // values per channel
};

// y; running_mean/var F32 [C] (updated when training); saved_mean/invstd
// F32 [C] (present when training, absent otherwise).
struct BatchNormForwardCall : TypedCall {
  BatchNormShape shape{};
  Operand x, gamma, beta, y, running_mean, running_var, saved_mean, saved_invstd;
};
sdk::Status CheckBatchNormForward(const OpCall& call, BatchNormForwardCall* out);

// dx (overwritten), dgamma and dbeta [C] (added to when accumulate).
struct BatchNormBackwardCall : TypedCall {
  BatchNormShape shape{};
  Operand dy, x, gamma, saved_mean, saved_invstd, dx, dgamma, dbeta;
  bool accumulate = false;
};
sdk::Status CheckBatchNormBackward(const OpCall& call, BatchNormBackwardCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_BATCHNORM_H_

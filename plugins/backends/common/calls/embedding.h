// The contracts of EMBEDDING_FORWARD/BACKWARD (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend. The ids live
// in device memory: their range [0, vocab) is the kernel's to check (on the
// CPU before writing anything, on CUDA on the device).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_EMBEDDING_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_EMBEDDING_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// out [n, c] = rows of table [vocab, c] picked by ids I32 (n elements).
struct EmbeddingForwardCall : TypedCall {
  Operand table, ids, out;
  int64_t n = 0, vocab = 0, c = 0;
};
sdk::Status CheckEmbeddingForward(const OpCall& call, EmbeddingForwardCall* out);

// dtable [vocab, c] (+)= dout [n, c] scattered by ids, in a fixed order.
struct EmbeddingBackwardCall : TypedCall {
  Operand dout, ids, dtable;
  int64_t n = 0, vocab = 0, c = 0;
  bool accumulate = false;
};
sdk::Status CheckEmbeddingBackward(const OpCall& call, EmbeddingBackwardCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_EMBEDDING_H_

// The contracts of ATTENTION_FORWARD/BACKWARD (semantics:
// plugins/abi/mnt_backend.h), checked once for every backend: llm.c's packed
// qkv [B, T, 3C] with C = H * D.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_ATTENTION_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_ATTENTION_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// Sizes of one attention call; plain data, so kernels take it by value.
struct AttentionShape {
  int64_t b, t, c, h, d;
  float scale;  // resolved: params->scale, or 1/sqrt(D) for 0
  bool causal;
  // The products' precision (1.8; F32 from an older caller): F32 or TF32.
  MNT_ComputeMode compute;
};

// y [B, T, C] and lse F32 [B, H, T] from qkv.
struct AttentionForwardCall : TypedCall {
  AttentionShape shape{};
  Operand qkv, y, lse;
};
sdk::Status CheckAttentionForward(const OpCall& call, AttentionForwardCall* out);

// dqkv [B, T, 3C] (overwritten) from dy, qkv, the forward's y and lse.
struct AttentionBackwardCall : TypedCall {
  AttentionShape shape{};
  Operand dy, qkv, y, lse, dqkv;
};
sdk::Status CheckAttentionBackward(const OpCall& call, AttentionBackwardCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_ATTENTION_H_

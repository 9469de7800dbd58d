// The contracts of CONV2D_FORWARD / BACKWARD_DATA / BACKWARD_FILTER
// (semantics: plugins/abi/mnt_backend.h), checked once for every backend.
// NCHW images, filters [K, C/groups, R, S].
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_CONV_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_CONV_H_

#include <cstdint>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/op_call.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

// Sizes of one convolution: x [n, c, h, w], w [k, cg, r, s], y [n, k, p, q].
struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t k, r, s;     // filters
  int64_t p, q;        // output
  int64_t groups, cg, kg;  // cg = c / groups, kg = k / groups
  int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;

  int64_t patch() const { return cg * r * s; }  // one filter's inputs
  int64_t pixels() const { return p * q; }      // one output plane
};

// params: compute (a known mode) and the geometry (checked); accumulate is
// ignored by the forward.
struct Conv2dForwardCall : TypedCall {
  const MNT_Conv2dParams* params = nullptr;
  ConvShape shape{};
  Operand x, w, bias, y;  // bias [K] may be absent
};
sdk::Status CheckConv2dForward(const OpCall& call, Conv2dForwardCall* out);

// dx [n, c, h, w] (its dims give h and w) from dy and w.
struct Conv2dBackwardDataCall : TypedCall {
  const MNT_Conv2dParams* params = nullptr;
  ConvShape shape{};
  Operand dy, w, dx;
  bool accumulate = false;
};
sdk::Status CheckConv2dBackwardData(const OpCall& call, Conv2dBackwardDataCall* out);

// dw [k, cg, r, s] (its dims give r and s) and optional dbias [K] from dy, x.
struct Conv2dBackwardFilterCall : TypedCall {
  const MNT_Conv2dParams* params = nullptr;
  ConvShape shape{};
  Operand dy, x, dw, dbias;  // dbias may be absent
  bool accumulate = false;
};
sdk::Status CheckConv2dBackwardFilter(const OpCall& call,
                                      Conv2dBackwardFilterCall* out);

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_CALLS_CONV_H_

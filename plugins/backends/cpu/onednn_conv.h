// 2-D convolution on oneDNN's convolution primitives (forward with the bias
// fused, backward data, backward weights with the bias gradient fused), the
// engine of gemm=auto|onednn; gemm=reference keeps im2col + sgemm (conv.cc).
// Tensors stay NCHW / KCRS in the caller's memory: oneDNN picks its own
// (blocked) layouts and each call reorders into and out of them. One
// primitive set per pass and geometry, created on first use and kept.
// Operands are rounded to the compute format first (as the reference does),
// so only the order of the fp32 sums differs from the reference.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_CONV_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_CONV_H_

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "plugins/backends/common/calls/conv.h"
#include "plugins/backends/cpu/onednn_api.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

class OneDnnConv {
 public:
  // pool: the thread count every convolution runs on, whatever the step's
  // team (oneDNN's backward-filter sums threads' partial results, so its
  // bits depend on the count; convolutions are not cut into tiles).
  static sdk::Status Create(const onednn::Api* api, int pool,
                            std::unique_ptr<OneDnnConv>* out);
  ~OneDnnConv();

  // Each sets *done = false, computing nothing, when oneDNN has no primitive
  // for the geometry (the caller then runs the reference path).
  sdk::Status Forward(const backend::Conv2dForwardCall& c, bool* done);
  sdk::Status BackwardData(const backend::Conv2dBackwardDataCall& c, bool* done);
  // *bias_done: dbias was computed too (fused; only when dy needs no rounding,
  // since the bias gradient sums the unrounded dy).
  sdk::Status BackwardFilter(const backend::Conv2dBackwardFilterCall& c, bool* done,
                             bool* bias_done);

  // The implementations oneDNN picked so far ("jit:avx2", "gemm:jit", ...).
  std::string Kernels() const;

 private:
  enum Pass { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };
  // One argument of the primitive: the caller's plain memory and, when
  // oneDNN chose another layout, its own memory and the reorder between.
  struct Arg {
    int dnnl_arg = 0;
    bool output = false;
    dnnl_memory_t user = nullptr;
    dnnl_memory_t inner = nullptr;    // null: the primitive reads `user`
    dnnl_primitive_t reorder = nullptr;
  };
  struct Primitive {
    bool supported = false;
    dnnl_primitive_t primitive = nullptr;
    std::vector<Arg> args;
  };
  // pass, has_bias, n c h w k r s p q groups pad_h pad_w stride_h stride_w dil_h dil_w.
  using Key = std::array<int64_t, 19>;

  OneDnnConv(const onednn::Api* api, int pool) : api_(api), pool_(pool) {}
  sdk::Status GetPrimitive(Pass pass, const backend::ConvShape& sh, bool bias,
                           Primitive** out);
  sdk::Status Build(Pass pass, const backend::ConvShape& sh, bool bias, Primitive* p);
  sdk::Status BindArg(dnnl_primitive_desc_t pd, dnnl_query_t query, int dnnl_arg,
                      bool output, const dnnl_memory_desc_t& user_md, Primitive* p);
  // Runs the primitive on `data` (one pointer per arg, in args order).
  sdk::Status Execute(Primitive* p, const std::vector<void*>& data);
  void Destroy(Primitive* p);

  const onednn::Api* api_;
  const int pool_;
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::map<Key, Primitive> cache_;
  std::set<std::string> kernels_;
  mutable std::mutex mu_;
  // Rounded / widened operands and fp32 results, grown as needed and reused.
  std::vector<float> in0_, in1_, out0_, out1_;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_CONV_H_

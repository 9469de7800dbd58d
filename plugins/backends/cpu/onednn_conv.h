// 2-D convolution on oneDNN's convolution primitives (forward with the bias
// fused, backward data, backward weights with the bias gradient fused), the
// engine of gemm=auto|onednn; gemm=reference keeps im2col + sgemm (conv.cc).
//
// Compute formats: fp32 and tf32 run fp32 primitives on operands rounded to
// the compute format (as the reference does, so only the order of the fp32
// sums differs). bf16 (and fp16) run 16-bit primitives where oneDNN has them
// on this CPU (AVX512_BF16 / AMX: products of 16-bit values accumulated in
// fp32, as the reference computes them): operands stored in the compute
// format are read in place, others converted once; outputs are written in
// their own dtype when the primitive can (bf16 or fp32), else through an fp32
// buffer, and an accumulating backward adds an fp32 result to the stored
// gradient and rounds once. Where oneDNN has no 16-bit primitive (oneDNN 2.6
// has no f16 convolution; a CPU without AVX512_BF16 has no bf16 one) the
// call runs on rounded operands in fp32 and is counted as a slow path.
//
// Layouts: tensors stay NCHW / KCRS in the caller's memory at every call's
// boundary (the ABI's contract; the host may read and write host-addressable
// memory between calls without the backend seeing it). oneDNN picks its own
// (blocked) layouts: each call reorders its inputs into them and its outputs
// back. The primitives, the reorder primitives and the blocked buffers are
// created once per pass, geometry and dtypes and kept; no blocked tensor
// content is kept across calls, since a copy the host's write did not reach
// would be stale.
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
  // native_bf16: bf16 convolutions on oneDNN's bf16 primitives (the GEMM
  // engine's choice: onednn_bf16=auto|native|fp32). fp16 ones try oneDNN's
  // f16 primitives where the CPU has AVX512-FP16.
  static sdk::Status Create(const onednn::Api* api, int pool, bool native_bf16,
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
  // ABI 1.8 slow paths: 16-bit convolutions run in fp32 for want of a
  // 16-bit primitive, "<calls> x <kind>: <shape>\n" per pass and format.
  std::string SlowPathReport() const;

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
  // The primitive's data types: src, weights, bias and dst in oneDNN's
  // terms (forward x, w, bias, y; backward data dx, w, -, dy; backward
  // weights x, dw, dbias, dy) and the compute type of the operands it
  // multiplies (the forward hint's).
  struct Types {
    dnnl_data_type_t src = dnnl_f32, weights = dnnl_f32, bias = dnnl_f32, dst = dnnl_f32;
    dnnl_data_type_t compute = dnnl_f32;
  };
  // pass, has_bias, n c h w k r s p q groups pad_h pad_w stride_h stride_w
  // dil_h dil_w, then the Types.
  using Key = std::array<int64_t, 23>;

  OneDnnConv(const onednn::Api* api, int pool, bool native_bf16)
      : api_(api), pool_(pool), native_bf16_(native_bf16) {}
  sdk::Status GetPrimitive(Pass pass, const backend::ConvShape& sh, bool bias,
                           const Types& types, Primitive** out);
  sdk::Status Build(Pass pass, const backend::ConvShape& sh, bool bias, const Types& types,
                    Primitive* p);
  // The 16-bit type a primitive multiplies in for `mode` (dnnl_bf16,
  // dnnl_f16), or dnnl_f32: fp32/tf32, and 16-bit formats this CPU or
  // configuration runs in fp32.
  dnnl_data_type_t ComputeType(MNT_ComputeMode mode) const;
  // An operand as a 16-bit primitive reads it: the tensor's memory when it
  // is stored in `dt`, else a converted copy in *buf; nullptr when this
  // backend has no conversion into `dt` (the call then runs in fp32).
  static void* Input16(const MNT_Tensor& t, dnnl_data_type_t dt, std::vector<uint16_t>* buf);
  // Counts a 16-bit call run in fp32 (slow path).
  void CountFp32Fallback(Pass pass, MNT_ComputeMode mode, const backend::ConvShape& sh);
  // The three passes in fp32 on rounded operands.
  sdk::Status ForwardF32(const backend::Conv2dForwardCall& c, bool* done);
  sdk::Status BackwardDataF32(const backend::Conv2dBackwardDataCall& c, bool* done);
  sdk::Status BackwardFilterF32(const backend::Conv2dBackwardFilterCall& c, bool* done,
                                bool* bias_done);
  sdk::Status BindArg(dnnl_primitive_desc_t pd, dnnl_query_t query, int dnnl_arg,
                      bool output, const dnnl_memory_desc_t& user_md, Primitive* p);
  // Runs the primitive on `data` (one pointer per arg, in args order).
  sdk::Status Execute(Primitive* p, const std::vector<void*>& data);
  void Destroy(Primitive* p);

  const onednn::Api* api_;
  const int pool_;
  const bool native_bf16_;
  const bool cpu_has_fp16_ = __builtin_cpu_supports("avx512fp16");
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::map<Key, Primitive> cache_;
  std::set<std::string> kernels_;
  mutable std::mutex mu_;
  // Rounded / widened operands and fp32 results, grown as needed and reused.
  std::vector<float> in0_, in1_, out0_, out1_;
  std::vector<uint16_t> in0_16_, in1_16_;
  // Slow paths: (pass, compute mode) -> calls and the first shape.
  struct Fallbacks {
    int64_t calls = 0;
    std::string shape;
  };
  std::map<std::pair<int, int>, Fallbacks> fallbacks_;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_CONV_H_

// GEMM on oneDNN's matmul primitive, working on the tensors' own memory
// (transposes as strides, alpha as the output scale, beta * C as a sum
// post-op, bias fused). The output is cut into tiles (gemm_tiles.h) that the
// OpenMP team computes one single-threaded primitive call each, so the bits
// do not depend on the team size. One primitive per tile shape and dtype
// combination, created on first use and kept; each team thread executes it
// with memory objects, a stream and a scratchpad of its own (oneDNN's user
// scratchpad mode: the documented way to run one primitive from several
// threads at once). Operands oneDNN cannot take as stored
// (16-bit storage into an fp32 GEMM, fp32 values to round to tf32/bf16/f16)
// are converted once into buffers the engine keeps between calls; products
// of rounded values are exact in fp32, so the result equals the reference
// GEMM's up to the order of the fp32 sums.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_GEMM_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_GEMM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "plugins/backends/common/calls/gemm.h"
#include "plugins/backends/cpu/onednn_api.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

class OneDnnGemm {
 public:
  // native_bf16: give bf16 operands to oneDNN as bf16 (its AVX512_BF16/AMX
  // kernels, fp32 accumulation) instead of widening them to fp32 first.
  // "auto" callers pass onednn::HasNativeBf16(isa).
  // pool: the most threads a product is cut for (GemmTiles); the team that
  // runs a call is omp_get_max_threads() then, at most the tile count.
  static sdk::Status Create(const onednn::Api* api, bool native_bf16, int pool,
                            std::unique_ptr<OneDnnGemm>* out);
  ~OneDnnGemm();

  // The checked call (k > 0, m > 0, n > 0).
  sdk::Status Run(const backend::GemmCall& g);

  const onednn::Api* api() const { return api_; }
  dnnl_cpu_isa_t isa() const { return isa_; }
  bool native_bf16() const { return native_bf16_; }
  // The implementations oneDNN picked so far ("gemm:jit", "brg:avx512_core_amx_bf16", ...).
  std::string Kernels() const;

 private:
  // What one thread needs to execute a primitive.
  struct Slot {
    dnnl_memory_t a = nullptr, b = nullptr, bias = nullptr, c = nullptr;
    dnnl_memory_t scratchpad = nullptr;
    dnnl_stream_t stream = nullptr;
    std::vector<uint8_t> scratchpad_bytes;
  };
  struct Primitive {
    dnnl_primitive_t primitive = nullptr;
    dnnl_memory_desc_t a_md, b_md, c_md, bias_md, scratchpad_md;
    size_t scratchpad_size = 0;
    int bias_arg = 0;  // DNNL_ARG_BIAS, or the bias post-op's source
    std::vector<Slot> slots;  // one per team thread, grown as needed
  };
  // m, n, k, lda, ldb, ldc (the tile's; leading dimensions are the whole
  // product's), trans_a, trans_b, a/b/c dtypes, bias, alpha, beta.
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool,
                         int, int, int, bool, float, float>;

  OneDnnGemm(const onednn::Api* api, bool native_bf16, int pool)
      : api_(api), native_bf16_(native_bf16), pool_(pool) {}
  // The cached primitive for `key` with at least `slots` slots.
  sdk::Status GetPrimitive(const Key& key, int slots, Primitive** out);
  sdk::Status CreatePrimitive(const Key& key, Primitive* out);
  sdk::Status GrowSlots(int slots, Primitive* p);
  void Destroy(Slot& slot);

  const onednn::Api* api_;
  const bool native_bf16_;
  const int pool_;
  dnnl_cpu_isa_t isa_ = dnnl_cpu_isa_all;
  dnnl_engine_t engine_ = nullptr;
  std::map<Key, Primitive> cache_;
  std::set<std::string> kernels_;
  mutable std::mutex mu_;
  // Converted operands, grown as needed and reused.
  std::vector<float> a_f32_, b_f32_, c_f32_, bias_f32_;
  std::vector<uint16_t> a_bf16_, b_bf16_;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_ONEDNN_GEMM_H_

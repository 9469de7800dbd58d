// What a cached GEMM plan (gemm.cu: cuBLASLt matmul descriptor, three matrix
// layouts and the heuristic's algorithm) is keyed on, and the bounded map that
// holds the plans. Host-only and free of CUDA headers, so the CPU tests the
// key, its hash and the cache in CI (gemm_plan_key_test.cc).
//
// The key is a plain struct compared field by field: building it costs no
// allocation and no formatting, so a GEMM that hits the cache does nothing
// per call beyond setting the bias pointer and calling cublasLtMatmul.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_PLAN_KEY_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_PLAN_KEY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <unordered_map>
#include <utility>

namespace mnt::cuda {

// Largest power of two (<= 256) dividing the address (256 for NULL): what
// cuBLASLt may assume about an operand that is an offset into an allocation.
inline uint32_t PointerAlignment(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 256;
  return static_cast<uint32_t>(std::min<uintptr_t>(256, a & (~a + 1)));
}

// The alignment cuBLASLt may assume of every matrix of a strided batch whose
// first starts at p, rows `ld_bytes` and matrices `stride_bytes` apart: the
// least of the three (an ld or stride of 0 takes nothing away).
inline uint32_t StridedAlignment(const void* p, int64_t ld_bytes, int64_t stride_bytes) {
  const auto of = [](int64_t bytes) {
    return PointerAlignment(reinterpret_cast<const void*>(static_cast<uintptr_t>(bytes)));
  };
  return std::min({PointerAlignment(p), of(ld_bytes), of(stride_bytes)});
}

// Everything the descriptors, the layouts and the heuristic's answer depend
// on. Enums are kept as their raw int32 values (MNT_DType,
// cublasComputeType_t, cublasLtEpilogue_t) so that this header needs no CUDA.
struct GemmPlanKey {
  int64_t m = 0, n = 0, k = 0;
  int32_t trans_a = 0, trans_b = 0;
  int32_t operand_dtype = 0;  // A and B as cuBLASLt reads them
  int32_t output_dtype = 0;   // C/D as cuBLASLt writes it
  int32_t bias_dtype = 0;     // 0 (MNT_DTYPE_INVALID) without a bias
  int32_t compute = 0;        // cublasComputeType_t
  int32_t epilogue = 0;       // cublasLtEpilogue_t
  // The GELU epilogues' auxiliary matrix (the pre-activation): 0 without.
  int32_t aux_dtype = 0;
  // Pointer alignments the heuristic was told about (cuBLASLt's A is our B).
  // The bias's is in the key too: the heuristic reads the bias pointer, so
  // an algorithm chosen for one bias alignment is never used with a smaller.
  uint32_t align_a = 0, align_b = 0, align_c = 0, align_bias = 0;
  uint32_t align_aux = 0;
  // Strided-batched products (attention_gemm.cu): leading dimensions of the
  // row-major A, B, C (0: packed, as GEMM's), the batch count (0: one
  // matrix) and the batch strides, all in elements.
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 0, stride_a = 0, stride_b = 0, stride_c = 0;
  // FP8 products (SCALED_GEMM, fp8.cu): cuBLASLt's B operand's dtype when it
  // differs from operand_dtype (its A; 0: the same), and fast accumulation.
  int32_t operand_b_dtype = 0;
  int32_t fast_accum = 0;

  friend bool operator==(const GemmPlanKey& x, const GemmPlanKey& y) {
    return x.m == y.m && x.n == y.n && x.k == y.k && x.trans_a == y.trans_a &&
           x.trans_b == y.trans_b && x.operand_dtype == y.operand_dtype &&
           x.output_dtype == y.output_dtype && x.bias_dtype == y.bias_dtype &&
           x.compute == y.compute && x.epilogue == y.epilogue &&
           x.aux_dtype == y.aux_dtype && x.align_aux == y.align_aux &&
           x.align_a == y.align_a && x.align_b == y.align_b &&
           x.align_c == y.align_c && x.align_bias == y.align_bias && x.lda == y.lda &&
           x.ldb == y.ldb && x.ldc == y.ldc && x.batch == y.batch &&
           x.stride_a == y.stride_a && x.stride_b == y.stride_b && x.stride_c == y.stride_c &&
           x.operand_b_dtype == y.operand_b_dtype && x.fast_accum == y.fast_accum;
  }
  friend bool operator!=(const GemmPlanKey& x, const GemmPlanKey& y) { return !(x == y); }
};

// FNV-1a over every field's value (never over the struct's bytes, whose
// padding is indeterminate), 8 bytes at a time.
struct GemmPlanKeyHash {
  size_t operator()(const GemmPlanKey& key) const {
    uint64_t h = 14695981039346656037ull;
    auto mix = [&h](uint64_t v) {
      for (int byte = 0; byte < 8; ++byte) {
        h ^= (v >> (8 * byte)) & 0xffu;
        h *= 1099511628211ull;
      }
    };
    auto pair = [](int32_t hi, int32_t lo) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) |
             static_cast<uint32_t>(lo);
    };
    mix(static_cast<uint64_t>(key.m));
    mix(static_cast<uint64_t>(key.n));
    mix(static_cast<uint64_t>(key.k));
    mix(pair(key.trans_a, key.trans_b));
    mix(pair(key.operand_dtype, key.output_dtype));
    mix(pair(key.bias_dtype, key.compute));
    mix(pair(key.epilogue, key.aux_dtype));
    mix(pair(static_cast<int32_t>(key.align_a), static_cast<int32_t>(key.align_b)));
    mix(pair(static_cast<int32_t>(key.align_c), static_cast<int32_t>(key.align_bias)));
    mix(static_cast<uint64_t>(key.align_aux));
    mix(pair(key.operand_b_dtype, key.fast_accum));
    for (int64_t v : {key.lda, key.ldb, key.ldc, key.batch, key.stride_a, key.stride_b,
                      key.stride_c}) {
      mix(static_cast<uint64_t>(v));
    }
    return static_cast<size_t>(h);
  }
};

// Plans by key, at most `capacity` of them: inserting into a full cache first
// drops every plan (a run with endlessly varying shapes stays bounded; a
// training loop with a fixed set of shapes fills it once). Plan is a
// move-only owner of its resources; dropped plans release them.
template <typename Plan>
class GemmPlanCache {
 public:
  explicit GemmPlanCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The plan for `key`, or nullptr.
  Plan* Find(const GemmPlanKey& key) {
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : &it->second;
  }

  // Stores `plan` under `key` (replacing one already there) and returns it.
  Plan* Insert(const GemmPlanKey& key, Plan plan) {
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      it->second = std::move(plan);
      return &it->second;
    }
    if (plans_.size() >= capacity_) plans_.clear();
    return &plans_.emplace(key, std::move(plan)).first->second;
  }

  void Clear() { plans_.clear(); }
  size_t size() const { return plans_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::unordered_map<GemmPlanKey, Plan, GemmPlanKeyHash> plans_;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_PLAN_KEY_H_

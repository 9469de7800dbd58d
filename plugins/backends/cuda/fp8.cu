// FP8 (ABI 1.9): SCALED_CAST and SCALED_GEMM; (1.10) FP8_SCALE_UPDATE.
//
// SCALED_CAST runs on any GPU: one grid-stride kernel per direction with
// common/fp8_convert.h's bit-exact conversions (quantize: x * scale in fp32,
// rounded to nearest even and saturated; dequantize: the exact decode times
// the inverse scale, rounded to y's dtype), the CPU backend's bits. The
// optional amax (max |x|, NaN when any element is NaN) is a per-block max
// in the same kernel and one block combining the partials; max is exact, so
// the result does not depend on the order.
//
// SCALED_GEMM is one cuBLASLt FP8 matmul (sm_89 or newer; below that it
// refuses in one line, and Backend_GetOpSupport says 0 through
// CudaBackend::DeviceSupports). As in gemm.cu, row-major D = op(A) op(B) is
// the column-major D^T = op(B)^T op(A)^T, so cuBLASLt's "A" is our B and its
// "B" is our A. cuBLASLt's FP8 kernels accept only the "TN" layout (its A
// transposed, its B not), which in our terms is A stored [M, K] and B stored
// [N, K], both K-contiguous (trans_a = 0, trans_b = 1), with 16-byte aligned
// pointers and leading dimensions. An operand stored otherwise (trans_a, or
// not trans_b), misaligned, or with K not a multiple of 16 is first copied
// into workspace in that layout by a small tiled transpose/pack kernel, K
// zero-padded to a multiple of 16 (padding is zero on both sides, so every
// added product is +0 and the sums are unchanged). The inverse scales go in
// as CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER (device pointers, swapped with
// the operands), alpha as the matmul's alpha, fast_accumulation as
// CUBLASLT_MATMUL_DESC_FAST_ACCUM; fp32 compute (CUBLAS_COMPUTE_32F).
//
// D is written by cuBLASLt itself (C = D for beta) when M and N are
// multiples of 16, D is 16-byte aligned and, for a 16-bit D, there is no
// amax and the bias (if any) is one cuBLASLt's FP8 bias epilogue takes
// (CUBLASLT_EPILOGUE_BIAS: bf16 for an fp32 or bf16 D, fp16 for an fp16 D,
// 16-byte aligned). Otherwise the product goes to fp32 scratch (M and N
// padded to 16) and one finish kernel adds beta * D and the bias, rounds
// into D once and takes the amax of the unrounded values. With an fp32 D
// written directly, a bias the epilogue cannot take and the amax are one
// in-place pass of the same kernel. The amax is always this backend's own
// NaN-propagating reduction rather than CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
// the ABI wants NaN when any element is NaN, which cuBLASLt does not
// document, and amax before rounding to a 16-bit D.
//
// FP8_SCALE_UPDATE runs on any GPU (no tensor cores): one thread per scaled
// tensor n, common/fp8_scale_math.h's Fp8ScaleUpdateOne on its history
// column (row stride N, so a warp's loads and stores of a row coalesce),
// scale and scale_inv. The header spells its divisions and the margin's
// product with __fdiv_rn/__dmul_rn/__double2float_rn (never contracted,
// IEEE whatever the flags): the CPU backend's bits.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <utility>

#include "plugins/backends/common/fp8_convert.h"
#include "plugins/backends/common/fp8_scale_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/gemm.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

// ---- amax ----------------------------------------------------------------------

// max of two |values| (>= 0) that lets NaN win.
struct AbsMaxOp {
  __device__ float operator()(float a, float b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
};

constexpr int64_t kElementsPerBlock = kThreads * 8;
constexpr int64_t kMaxBlocks = 1024;

// Blocks of the grid-stride kernels below (each writes one amax partial).
unsigned Fp8Grid(int64_t n) {
  int64_t blocks = (n + kElementsPerBlock - 1) / kElementsPerBlock;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// One partial per block; every thread of the block must call it.
__device__ inline void WriteBlockMax(float local, float* partials) {
  const float m = BlockReduce(local, AbsMaxOp(), 0.0f);
  if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

// *amax = max of the partials (0 for none: the max |x| of no elements).
__global__ void AmaxFinishKernel(const float* partials, int64_t count, float* amax) {
  float m = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) m = AbsMaxOp()(m, partials[i]);
  m = BlockReduce(m, AbsMaxOp(), 0.0f);
  if (threadIdx.x == 0) *amax = m;
}

// ---- SCALED_CAST ---------------------------------------------------------------

template <bool kE5M2>
__device__ inline uint8_t EncodeFp8(float v) {
  return kE5M2 ? FloatToFp8E5M2Bits(v) : FloatToFp8E4M3Bits(v);  // saturating
}
template <bool kE5M2>
__device__ inline float DecodeFp8(uint8_t b) {
  return kE5M2 ? Fp8E5M2BitsToFloat(b) : Fp8E4M3BitsToFloat(b);
}

// y = fp8(x * scale); partials (NULL: no amax) get max |x| per block.
template <typename S, bool kE5M2>
__global__ void QuantizeKernel(DevTensor x, const float* scale, uint8_t* y, int64_t n,
                               float* partials) {
  const float s = *scale;
  float local = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = Load<S>(x, i);
    // A NaN is passed on as it is: the GPU's multiply would give its
    // canonical NaN and lose the sign the CPU backend keeps.
    y[i] = EncodeFp8<kE5M2>(v != v ? v : v * s);
    local = AbsMaxOp()(local, fabsf(v));
  }
  if (partials != nullptr) WriteBlockMax(local, partials);
}

// y = decode(x) * scale_inv rounded to y's dtype; amax of |decode(x)|.
template <typename S, bool kE5M2>
__global__ void DequantizeKernel(const uint8_t* x, const float* scale_inv, DevTensor y,
                                 int64_t n, float* partials) {
  const float s = *scale_inv;
  float local = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = DecodeFp8<kE5M2>(x[i]);
    Store<S>(y, i, v != v ? v : v * s);  // the decoded NaN's bits, as the CPU's
    local = AbsMaxOp()(local, fabsf(v));
  }
  if (partials != nullptr) WriteBlockMax(local, partials);
}

// ---- SCALED_GEMM -----------------------------------------------------------------

constexpr int kTile = 32;
constexpr int kTileRowsPerPass = kThreads / kTile;  // 8

// dst [rows_p, cols_p] row-major (FP8 bytes) = the logical [rows, cols]
// matrix, zero outside it; the source is stored [rows, cols] or, when
// `transposed`, [cols, rows]. 32 x 32 tiles through shared memory so that
// both the reads and the writes are coalesced either way. Block: kThreads
// (32 x 8); grid: column tiles x row tiles (the latter grid-strided).
__global__ void PackFp8Kernel(const uint8_t* src, int64_t rows, int64_t cols,
                              bool transposed, uint8_t* dst, int64_t rows_p,
                              int64_t cols_p) {
  __shared__ uint8_t tile[kTile][kTile + 1];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile; r0 < rows_p;
       r0 += static_cast<int64_t>(gridDim.y) * kTile) {
    // tile[i][j] = logical (r0 + i, c0 + j), read in the source's order.
    for (int j = ty; j < kTile; j += kTileRowsPerPass) {
      if (transposed) {
        const int64_t r = r0 + tx, c = c0 + j;
        tile[tx][j] = (r < rows && c < cols) ? src[c * rows + r] : uint8_t{0};
      } else {
        const int64_t r = r0 + j, c = c0 + tx;
        tile[j][tx] = (r < rows && c < cols) ? src[r * cols + c] : uint8_t{0};
      }
    }
    __syncthreads();
    for (int j = ty; j < kTile; j += kTileRowsPerPass) {
      const int64_t r = r0 + j, c = c0 + tx;
      if (r < rows_p && c < cols_p) dst[r * cols_p + c] = tile[j][tx];
    }
    __syncthreads();
  }
}

// D[r, c] = src[r * ld + c] (0 when src is NULL: K == 0) + beta * D[r, c]
// (not read when beta == 0) + bias[c], rounded once into D's dtype; the
// amax partials (NULL: none) of the values before that rounding. In place
// (src == D, fp32) is fine: each element is read and written by one thread.
template <typename S>
__global__ void FinishKernel(const float* src, int64_t ld, DevTensor d, int64_t m, int64_t n,
                             float beta, DevTensor bias, float* partials) {
  float local = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < m * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i % n;
    float v = src != nullptr ? src[r * ld + c] : 0.0f;
    if (beta != 0.0f) v += beta * Load<S>(d, i);
    if (bias.data != nullptr) v += Load(bias, c);
    Store<S>(d, i, v);
    local = AbsMaxOp()(local, fabsf(v));
  }
  if (partials != nullptr) WriteBlockMax(local, partials);
}

cudaDataType_t Fp8CudaType(MNT_DType t) {
  return t == MNT_DTYPE_F8_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

cudaDataType_t FloatCudaType(MNT_DType t) {
  switch (t) {
    case MNT_DTYPE_F16: return CUDA_R_16F;
    case MNT_DTYPE_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

int64_t RoundUp16(int64_t v) { return (v + 15) / 16 * 16; }

// The pointers set on a plan's descriptor at every call (device pointers
// that differ between calls; the key holds their alignments).
struct Fp8CallPointers {
  const void* lt_a_scale;  // our B's inverse scale (cuBLASLt's A is our B)
  const void* lt_b_scale;  // our A's
  const void* bias;        // NULL: no fused bias
};

Status SetCallPointers(const GemmPlan& plan, const Fp8CallPointers& ptrs) {
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                     &ptrs.lt_a_scale, sizeof(ptrs.lt_a_scale)),
      "SCALED_GEMM: cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                     &ptrs.lt_b_scale, sizeof(ptrs.lt_b_scale)),
      "SCALED_GEMM: cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  if (ptrs.bias != nullptr) {
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptrs.bias,
                                       sizeof(ptrs.bias)),
        "SCALED_GEMM: cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  return Status::Ok();
}

// Descriptor, layouts and the heuristic's algorithm of an FP8 "TN" product
// (key: m, n, k as padded, ldc D's row pitch, trans_a = 0 and trans_b = 1
// always; operand_dtype cuBLASLt's A = our B, operand_b_dtype our A).
Status CreateFp8Plan(cublasLtHandle_t lt, const GemmPlanKey& key,
                     const Fp8CallPointers& ptrs, GemmPlan* plan) {
  MNT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                             "SCALED_GEMM: cublasLtMatmulDescCreate");
  const cublasOperation_t lt_ta = CUBLAS_OP_T, lt_tb = CUBLAS_OP_N;  // "TN"
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &lt_ta,
                                     sizeof(lt_ta)),
      "SCALED_GEMM: cublasLtMatmulDescSetAttribute(TRANSA)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &lt_tb,
                                     sizeof(lt_tb)),
      "SCALED_GEMM: cublasLtMatmulDescSetAttribute(TRANSB)");
  const int8_t fast_accum = key.fast_accum != 0 ? 1 : 0;
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                     sizeof(fast_accum)),
      "SCALED_GEMM: cublasLtMatmulDescSetAttribute(FAST_ACCUM)");
  MNT_RETURN_IF_ERROR(SetCallPointers(*plan, ptrs));
  const auto epilogue = static_cast<cublasLtEpilogue_t>(key.epilogue);
  if (ptrs.bias != nullptr) {
    const cudaDataType_t bias_type = FloatCudaType(static_cast<MNT_DType>(key.bias_dtype));
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                       &bias_type, sizeof(bias_type)),
        "SCALED_GEMM: cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  }
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                     sizeof(epilogue)),
      "SCALED_GEMM: cublasLtMatmulDescSetAttribute(EPILOGUE)");
  // cuBLASLt's A: our B [N, K] row-major = column-major K x N, ld K,
  // transposed to N x K. Its B: our A [M, K] = column-major K x M, ld K.
  // D: row-major [M, N] with row pitch ldc = column-major N x M, ld ldc.
  const uint64_t m = key.m, n = key.n, k = key.k;
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&plan->a, Fp8CudaType(static_cast<MNT_DType>(key.operand_dtype)),
                                 k, n, k),
      "SCALED_GEMM: cublasLtMatrixLayoutCreate(A)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&plan->b,
                                 Fp8CudaType(static_cast<MNT_DType>(key.operand_b_dtype)), k,
                                 m, k),
      "SCALED_GEMM: cublasLtMatrixLayoutCreate(B)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&plan->c, FloatCudaType(static_cast<MNT_DType>(key.output_dtype)),
                                 n, m, static_cast<int64_t>(key.ldc)),
      "SCALED_GEMM: cublasLtMatrixLayoutCreate(C)");

  return SelectGemmAlgorithm(lt, key, plan, "SCALED_GEMM");
}

// src [rows, cols] (or [cols, rows] when transposed) packed into scratch as
// [rows_p, cols_p], zero-padded.
Status Pack(CudaBackend& b, const backend::ScaledGemmCall& g, const void* src, int64_t rows,
            int64_t cols, bool transposed, int64_t rows_p, int64_t cols_p, Scratch* scratch,
            const void** out, const char* kernel) {
  MNT_RETURN_IF_ERROR(scratch->Allocate(static_cast<size_t>(rows_p * cols_p)));
  const int64_t row_tiles = (rows_p + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>((cols_p + kTile - 1) / kTile),
                  static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));
  *out = scratch->data();
  return Launched(g,
                  Launch(PackFp8Kernel, grid, kThreads, 0, b.stream,
                         static_cast<const uint8_t*>(src), rows, cols, transposed,
                         static_cast<uint8_t*>(scratch->data()), rows_p, cols_p),
                  kernel);
}

// FinishKernel over D (src NULL: K == 0), then the amax when asked for.
Status Finish(CudaBackend& b, const backend::ScaledGemmCall& g, const float* src, int64_t ld,
              float beta, DevTensor bias) {
  const int64_t mn = g.m * g.n;
  const unsigned grid = Fp8Grid(mn);
  Scratch partials(b);
  float* part = nullptr;
  if (g.amax.present()) {
    MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(float) * grid));
    part = static_cast<float*>(partials.data());
  }
  const cudaError_t err = WithStorage(g.d->dtype, [&](auto storage) {
    return Launch(FinishKernel<decltype(storage)>, grid, kThreads, 0, b.stream, src, ld,
                  Dev(g.d), g.m, g.n, beta, bias, part);
  });
  MNT_RETURN_IF_ERROR(Launched(g, err, "scaled_gemm_finish"));
  if (part == nullptr) return Status::Ok();
  return Launched(g,
                  Launch(AmaxFinishKernel, 1, kThreads, 0, b.stream,
                         static_cast<const float*>(part), static_cast<int64_t>(grid),
                         static_cast<float*>(g.amax->data)),
                  "scaled_gemm_amax");
}

}  // namespace

Status CudaBackend::ScaledCast(const backend::ScaledCastCall& c) {
  const int64_t n = c.n;
  if (n == 0 && !c.amax.present()) return Status::Ok();
  const unsigned grid = Fp8Grid(n);
  Scratch partials(*this);
  float* part = nullptr;
  if (c.amax.present()) {
    MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(float) * grid));
    part = static_cast<float*>(partials.data());
  }
  const float* scale = static_cast<const float*>(c.scale->data);
  cudaError_t err;
  if (c.quantize) {
    const bool e5m2 = c.y->dtype == MNT_DTYPE_F8_E5M2;
    uint8_t* y = static_cast<uint8_t*>(c.y->data);
    err = WithStorage(c.x->dtype, [&](auto storage) {
      using S = decltype(storage);
      return e5m2 ? Launch(QuantizeKernel<S, true>, grid, kThreads, 0, stream, Dev(c.x), scale,
                           y, n, part)
                  : Launch(QuantizeKernel<S, false>, grid, kThreads, 0, stream, Dev(c.x),
                           scale, y, n, part);
    });
  } else {
    const bool e5m2 = c.x->dtype == MNT_DTYPE_F8_E5M2;
    const uint8_t* x = static_cast<const uint8_t*>(c.x->data);
    err = WithStorage(c.y->dtype, [&](auto storage) {
      using S = decltype(storage);
      return e5m2 ? Launch(DequantizeKernel<S, true>, grid, kThreads, 0, stream, x, scale,
                           Dev(c.y), n, part)
                  : Launch(DequantizeKernel<S, false>, grid, kThreads, 0, stream, x, scale,
                           Dev(c.y), n, part);
    });
  }
  MNT_RETURN_IF_ERROR(
      Launched(c, err, c.quantize ? "scaled_cast_quantize" : "scaled_cast_dequantize"));
  if (part == nullptr) return Status::Ok();
  return Launched(c,
                  Launch(AmaxFinishKernel, 1, kThreads, 0, stream,
                         static_cast<const float*>(part), static_cast<int64_t>(grid),
                         static_cast<float*>(c.amax->data)),
                  "scaled_cast_amax");
}

Status CudaBackend::ScaledGemm(const backend::ScaledGemmCall& g) {
  if (sm < kMinFp8GemmSm) {
    return sdk::Unimplemented(sdk::Format(
        "SCALED_GEMM needs FP8 tensor cores (sm_89 or newer); this GPU is sm_%d", sm));
  }
  const MNT_ScaledGemmParams* p = g.params;
  const int64_t m = g.m, n = g.n, k = g.k;
  const bool want_amax = g.amax.present();
  if (m == 0 || n == 0 || k == 0) {
    // No product: D = beta * D + bias (nothing to write when D is empty);
    // the amax of what D holds then (0 when empty).
    if (m * n == 0 && !want_amax) return Status::Ok();
    return Finish(*this, g, nullptr, 0, p->beta, Dev(g.bias));
  }

  // Where D comes from (the file comment): cuBLASLt writing D itself, or
  // fp32 scratch with M and N padded and a finish kernel.
  const MNT_DType d_dtype = g.d->dtype;
  const bool d_16bit = d_dtype != MNT_DTYPE_F32;
  const MNT_DType epilogue_bias_dtype = d_dtype == MNT_DTYPE_F16 ? MNT_DTYPE_F16 : MNT_DTYPE_BF16;
  const bool bias_fusable = g.bias.present() && g.bias->dtype == epilogue_bias_dtype &&
                            Aligned16(g.bias->data);
  const bool d_direct = m % 16 == 0 && n % 16 == 0 && Aligned16(g.d->data) &&
                        (!d_16bit || (!want_amax && (!g.bias.present() || bias_fusable)));
  const int64_t pm = d_direct ? m : RoundUp16(m);
  const int64_t pn = d_direct ? n : RoundUp16(n);
  const int64_t pk = RoundUp16(k);

  // The operands in the "TN" layout (A [pm, pk], B [pn, pk], K-contiguous):
  // the tensors themselves when they already are, else transposed and/or
  // padded copies in workspace.
  Scratch a_copy(*this), b_copy(*this), d_scratch(*this);
  const void* a_ptr = g.a->data;
  const void* b_ptr = g.b->data;
  if (g.trans_a || pk != k || pm != m || !Aligned16(a_ptr)) {
    MNT_RETURN_IF_ERROR(Pack(*this, g, g.a->data, m, k, /*transposed=*/g.trans_a, pm, pk,
                             &a_copy, &a_ptr, "scaled_gemm_pack_a"));
  }
  if (!g.trans_b || pk != k || pn != n || !Aligned16(b_ptr)) {
    MNT_RETURN_IF_ERROR(Pack(*this, g, g.b->data, n, k, /*transposed=*/!g.trans_b, pn, pk,
                             &b_copy, &b_ptr, "scaled_gemm_pack_b"));
  }
  void* d_ptr = g.d->data;
  MNT_DType lt_d_dtype = d_dtype;
  int64_t ldd = n;
  if (!d_direct) {
    MNT_RETURN_IF_ERROR(d_scratch.Allocate(sizeof(float) * static_cast<size_t>(pm * pn)));
    d_ptr = d_scratch.data();
    lt_d_dtype = MNT_DTYPE_F32;
    ldd = pn;
  }
  const bool fuse_bias = d_direct && bias_fusable;
  MNT_RETURN_IF_ERROR(EnsureGemmWorkspace(*this));

  GemmPlanKey key;
  key.m = pm;
  key.n = pn;
  key.k = pk;
  key.trans_a = 0;
  key.trans_b = 1;
  key.operand_dtype = g.b->dtype;  // cuBLASLt's A is our B
  key.operand_b_dtype = g.a->dtype;
  key.output_dtype = lt_d_dtype;
  key.bias_dtype = fuse_bias ? g.bias->dtype : MNT_DTYPE_INVALID;
  key.compute = static_cast<int32_t>(CUBLAS_COMPUTE_32F);
  key.epilogue =
      static_cast<int32_t>(fuse_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
  key.align_a = PointerAlignment(b_ptr);
  key.align_b = PointerAlignment(a_ptr);
  key.align_c = PointerAlignment(d_ptr);
  key.align_bias = fuse_bias ? PointerAlignment(g.bias->data) : 0;
  key.ldc = ldd;
  key.fast_accum = p->fast_accumulation != 0 ? 1 : 0;
  const Fp8CallPointers ptrs{g.scale_inv_b->data, g.scale_inv_a->data,
                             fuse_bias ? g.bias->data : nullptr};
  GemmPlan* plan = gemm->plans.Find(key);
  if (plan == nullptr) {
    GemmPlan fresh;
    MNT_RETURN_IF_ERROR(CreateFp8Plan(gemm->lt, key, ptrs, &fresh));
    plan = gemm->plans.Insert(key, std::move(fresh));
  } else {
    MNT_RETURN_IF_ERROR(SetCallPointers(*plan, ptrs));
  }
  if (!plan->algo.has_value()) {
    return sdk::Unimplemented(sdk::Format(
        "SCALED_GEMM: cuBLASLt has no FP8 algorithm for M=%lld N=%lld K=%lld (A %s, B %s, "
        "D %s%s)",
        (long long)pm, (long long)pn, (long long)pk, sdk::DTypeName(g.a->dtype),
        sdk::DTypeName(g.b->dtype), sdk::DTypeName(lt_d_dtype),
        fuse_bias ? ", bias epilogue" : ""));
  }
  const float alpha = p->alpha;
  const float beta = d_direct ? p->beta : 0.0f;  // scratch: beta in the finish kernel
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmul(gemm->lt, plan->op, &alpha, b_ptr, plan->a, a_ptr, plan->b, &beta, d_ptr,
                     plan->c, d_ptr, plan->c, &*plan->algo, gemm->workspace,
                     GemmState::kWorkspaceBytes, stream),
      "SCALED_GEMM: cublasLtMatmul");

  if (!d_direct) {
    return Finish(*this, g, static_cast<const float*>(d_ptr), ldd, p->beta, Dev(g.bias));
  }
  // D written by cuBLASLt (fp32 whenever something is left to do here): a
  // bias the epilogue could not take, and the amax, in one in-place pass.
  const bool bias_left = g.bias.present() && !fuse_bias;
  if (!bias_left && !want_amax) return Status::Ok();
  return Finish(*this, g, static_cast<const float*>(d_ptr), ldd, 0.0f,
                bias_left ? Dev(g.bias) : DevTensor{});
}

// ---- FP8_SCALE_UPDATE -------------------------------------------------------------

namespace {

// One thread per tensor (grid-strided): its history column, scale and
// scale_inv; the tensors share nothing, so the order is free.
__global__ void Fp8ScaleUpdateKernel(const float* amax, float* history, float* scale,
                                     float* scale_inv, int64_t n, int64_t rows,
                                     int64_t history_length, bool most_recent,
                                     float fp8_max, int32_t margin) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Fp8ScaleUpdateOne(amax[i], history + i, rows, n, history_length, most_recent, fp8_max,
                      margin, scale + i, scale_inv + i);
  }
}

}  // namespace

Status CudaBackend::Fp8ScaleUpdate(const backend::Fp8ScaleUpdateCall& u) {
  if (u.n == 0) return Status::Ok();
  return Launched(u,
                  Launch(Fp8ScaleUpdateKernel, GridFor(u.n, kThreads), kThreads, 0, stream,
                         static_cast<const float*>(u.amax->data),
                         static_cast<float*>(u.history->data),
                         static_cast<float*>(u.scale->data),
                         static_cast<float*>(u.scale_inv->data), u.n, u.rows,
                         u.history_length, u.most_recent, u.fp8_max, u.margin),
                  "fp8_scale_update");
}

}  // namespace mnt::cuda

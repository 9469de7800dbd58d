// GEMM's per-backend state (gemm.cu): the cuBLASLt handle, a cached plan per
// configuration (descriptors, layouts and the heuristic's algorithm), and one
// workspace. Kept out of backend.h so
// that only gemm.cu and plugin.cc compile cuBLASLt's headers.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_H_

#include <cublasLt.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "plugins/backends/common/calls.h"
#include "plugins/backends/cuda/gemm_plan_key.h"
#include "plugins/backends/cuda/launch.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

// One configuration's cuBLASLt objects, created once and reused by every
// call with the same GemmPlanKey (only the bias pointer is set per call).
// Owns its descriptors; move-only.
struct GemmPlan {
  GemmPlan() = default;
  GemmPlan(GemmPlan&& other) noexcept { *this = std::move(other); }
  GemmPlan& operator=(GemmPlan&& other) noexcept;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() { Release(); }
  void Release();

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  // nullopt: cuBLASLt has no algorithm for this configuration (cached too,
  // so that a refused shape is not re-queried every call).
  std::optional<cublasLtMatmulAlgo_t> algo;
};

struct GemmState {
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  GemmState() = default;
  GemmState(const GemmState&) = delete;
  GemmState& operator=(const GemmState&) = delete;
  ~GemmState();

  // More distinct configurations than a model's training step uses; a run
  // that exceeds it starts the cache over (gemm_plan_key.h).
  static constexpr size_t kMaxPlans = 4096;

  cublasLtHandle_t lt = nullptr;
  GemmPlanCache<GemmPlan> plans{kMaxPlans};
  // kWorkspaceBytes of the backend's memory (WORKSPACE category) on first
  // use; given back with the rest of the backend's memory.
  void* workspace = nullptr;
};

// The state with a fresh cuBLASLt handle.
sdk::Status CreateGemmState(std::unique_ptr<GemmState>* out);

struct CudaBackend;  // backend.h

// b.gemm->workspace, allocated on first use (GEMM's, shared with fp8.cu).
sdk::Status EnsureGemmWorkspace(CudaBackend& b);

// cuBLASLt's first heuristic choice for `plan`'s descriptor and layouts
// (GEMM's workspace, the key's alignments) into plan->algo; none found
// leaves it unset. Errors name `op_name` (GEMM, SCALED_GEMM).
sdk::Status SelectGemmAlgorithm(cublasLtHandle_t lt, const GemmPlanKey& key, GemmPlan* plan,
                                const char* op_name);

// A cuBLASLt epilogue beyond GEMM's bias: GELU_AUX_BIAS (bias in, aux the
// pre-activation out), DGELU / DGELU_BGRAD (aux in, bias the gradient out),
// BGRADB (bias the gradient out). Absent tensors have data NULL.
struct MatmulEpilogue {
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  DevTensor bias;
  DevTensor aux;
};

// D = alpha * op(A) op(B) + beta * D with `ep`, D being g.c, written in
// place by one cublasLtMatmul (cached plan, as GEMM's). Sets *done false and
// issues nothing when this configuration cannot take the epilogue (D, aux
// or bias in a dtype cuBLASLt will not write for these operands, aux's
// leading dimension not a multiple of 8, a pointer under 16-byte alignment,
// no algorithm from the heuristic); the caller then runs the unfused
// sequence.
sdk::Status MatmulWithEpilogue(CudaBackend& b, const backend::TypedCall& call,
                               const backend::GemmProduct& g, float beta,
                               const MatmulEpilogue& ep, bool* done);

// One fp32 strided-batched product, row-major: for j < batch,
//   C[j] = alpha * op(A[j]) op(B[j]) + beta * C[j],
// C[j] m x n at c + j * stride_c with rows ldc apart, op(A[j]) m x k (A
// stored k x m when trans_a), op(B[j]) k x n (B stored n x k when trans_b);
// all sizes in elements. The matrices of a batch may interleave (heads of
// a packed row, attention_gemm_plan.h); the C[j] must not overlap.
struct StridedMatmulF32 {
  int64_t m, n, k, batch;
  bool trans_a, trans_b;
  const float* a;
  int64_t lda, stride_a;
  const float* b;
  int64_t ldb, stride_b;
  float* c;
  int64_t ldc, stride_c;
  float alpha, beta;
};

// One cublasLtMatmul on the backend's handle, workspace and plan cache
// (GEMM's): CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores) for
// MNT_COMPUTE_TF32, CUBLAS_COMPUTE_32F (no TF32) for anything else; fp32
// accumulation either way. Sets *done false and issues nothing when
// cuBLASLt has no algorithm for this configuration (cached, as GEMM's).
// m, n, k and batch must be >= 1.
sdk::Status StridedMatmul(CudaBackend& b, const char* op_name, const StridedMatmulF32& g,
                          MNT_ComputeMode mode, bool* done);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_H_

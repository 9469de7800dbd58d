// GEMM through cuBLASLt, one path per compute mode:
//   F32  -> CUBLAS_COMPUTE_32F with fp32 operands (TF32 disabled),
//   TF32 -> CUBLAS_COMPUTE_32F_FAST_TF32 with fp32 operands,
//   BF16 / F16 -> 16-bit A and B, CUBLAS_COMPUTE_32F (fp32 accumulation).
// Operands stored in another dtype than the path needs are staged into a
// scratch copy rounded to the compute format first (as the CPU reference
// rounds them). Row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T, so cuBLAS's "A" is our B and its "B" is our A.
// The bias goes through CUBLASLT_EPILOGUE_BIAS; a bias that is not 16-byte
// aligned (an offset into a parameter block) is staged into aligned scratch
// first, so it never rules out the vectorised epilogues. Descriptors, layouts
// and the heuristic's answer (or that it has none) are created once per
// configuration (GemmPlanKey: shapes, dtypes, compute type, epilogue and the
// alignment of every pointer) and reused; a call that hits the cache formats
// no string and creates nothing. One 32 MiB workspace per backend. K == 0 (an
// empty sum) is this file's one kernel: C = beta * C (+ bias).
// StridedMatmul (the fp32 attention path's products) shares the handle,
// the workspace and the plan cache: its key adds leading dimensions, batch
// count and strides.
#include <cublasLt.h>

#include <algorithm>
#include <string>
#include <utility>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/elementwise.h"
#include "plugins/backends/cuda/gemm.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

cudaDataType_t CudaType(MNT_DType t) {
  switch (t) {
    case MNT_DTYPE_F16: return CUDA_R_16F;
    case MNT_DTYPE_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// Bias pointers less aligned than this are staged (cuBLASLt's vectorised
// epilogues load the bias 16 bytes at a time).
constexpr uint32_t kBiasAlignment = 16;

// True when rounding a `dtype` value to `mode` changes nothing.
bool RoundingIsIdentity(MNT_DType dtype, MNT_ComputeMode mode) {
  switch (mode) {
    case MNT_COMPUTE_F32: return true;
    case MNT_COMPUTE_TF32: return dtype == MNT_DTYPE_BF16 || dtype == MNT_DTYPE_F16;
    case MNT_COMPUTE_BF16: return dtype == MNT_DTYPE_BF16;
    case MNT_COMPUTE_F16: return dtype == MNT_DTYPE_F16;
    default: return false;
  }
}

// The bias after rounding to `mode` is exact in `d_type`.
bool BiasExactIn(MNT_DType bias, MNT_ComputeMode mode, MNT_DType d_type) {
  switch (d_type) {
    case MNT_DTYPE_F32: return true;
    case MNT_DTYPE_BF16: return bias == MNT_DTYPE_BF16 || mode == MNT_COMPUTE_BF16;
    case MNT_DTYPE_F16: return bias == MNT_DTYPE_F16 || mode == MNT_COMPUTE_F16;
    default: return false;
  }
}

// The preference only lives for the heuristic query.
struct PreferenceHolder {
  cublasLtMatmulPreference_t pref = nullptr;
  ~PreferenceHolder() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
  }
};

// Descriptors, layouts and the heuristic's answer for `key`; `bias` (NULL
// without one) is set as the bias pointer, since the heuristic reads it.
// Error messages name the failing call; nothing is formatted unless one
// fails.
Status CreatePlan(cublasLtHandle_t lt, const GemmPlanKey& key, void* bias,
                  void* aux, GemmPlan* plan) {
  const auto compute = static_cast<cublasComputeType_t>(key.compute);
  MNT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F),
                             "GEMM: cublasLtMatmulDescCreate");
  const cublasOperation_t lt_ta = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t lt_tb = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &lt_ta,
                                     sizeof(lt_ta)),
      "GEMM: cublasLtMatmulDescSetAttribute(TRANSA)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &lt_tb,
                                     sizeof(lt_tb)),
      "GEMM: cublasLtMatmulDescSetAttribute(TRANSB)");
  const auto epilogue = static_cast<cublasLtEpilogue_t>(key.epilogue);
  if (bias != nullptr) {
    const cudaDataType_t bias_type = CudaType(static_cast<MNT_DType>(key.bias_dtype));
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                       sizeof(bias)),
        "GEMM: cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                       &bias_type, sizeof(bias_type)),
        "GEMM: cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  }
  if (aux != nullptr) {
    // The pre-activation as cuBLASLt sees it: column-major [n, m], ld n.
    const int64_t aux_ld = key.n;
    const cudaDataType_t aux_type = CudaType(static_cast<MNT_DType>(key.aux_dtype));
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                       &aux, sizeof(aux)),
        "GEMM: cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                       &aux_ld, sizeof(aux_ld)),
        "GEMM: cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                                       &aux_type, sizeof(aux_type)),
        "GEMM: cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_DATA_TYPE)");
  }
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                     sizeof(epilogue)),
      "GEMM: cublasLtMatmulDescSetAttribute(EPILOGUE)");
  // Stored (pre-op) shapes: B row-major [K,N] is column-major [N,K], etc.;
  // a row-major matrix's row pitch is its column-major leading dimension
  // (packed unless the key gives one).
  const uint64_t m = key.m, n = key.n, k = key.k;
  const uint64_t a_rows = key.trans_b ? k : n, a_cols = key.trans_b ? n : k;
  const uint64_t b_rows = key.trans_a ? m : k, b_cols = key.trans_a ? k : m;
  const uint64_t a_ld = key.ldb != 0 ? key.ldb : a_rows;
  const uint64_t b_ld = key.lda != 0 ? key.lda : b_rows;
  const uint64_t c_ld = key.ldc != 0 ? key.ldc : n;
  const cudaDataType_t op_type = CudaType(static_cast<MNT_DType>(key.operand_dtype));
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&plan->a, op_type, a_rows, a_cols, a_ld),
      "GEMM: cublasLtMatrixLayoutCreate(A)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&plan->b, op_type, b_rows, b_cols, b_ld),
      "GEMM: cublasLtMatrixLayoutCreate(B)");
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&plan->c, CudaType(static_cast<MNT_DType>(key.output_dtype)),
                                 n, m, c_ld),
      "GEMM: cublasLtMatrixLayoutCreate(C)");
  if (key.batch > 1) {
    const int32_t count = static_cast<int32_t>(key.batch);
    const std::pair<cublasLtMatrixLayout_t, int64_t> batched[] = {
        {plan->a, key.stride_b}, {plan->b, key.stride_a}, {plan->c, key.stride_c}};
    for (const auto& [layout, stride] : batched) {
      MNT_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                           sizeof(count)),
          "GEMM: cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      MNT_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &stride, sizeof(stride)),
          "GEMM: cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
  }

  return SelectGemmAlgorithm(lt, key, plan, "GEMM");
}

// `src` copied into scratch as `to`, values rounded to `mode`.
Status Stage(CudaBackend& b, const backend::TypedCall& call, const Operand& src,
             MNT_DType to, MNT_ComputeMode mode, Scratch* scratch, DevTensor* out) {
  const int64_t n = sdk::NumElements(*src);
  MNT_RETURN_IF_ERROR(scratch->Allocate(static_cast<size_t>(n) * sdk::DTypeSize(to)));
  *out = DevTensor{scratch->data(), to};
  return Launched(call, LaunchConvert(b.stream, Dev(src), *out, n, mode), "stage_operand");
}

// How cuBLASLt reads A and B for a compute mode, and its compute type.
struct OperandFormat {
  MNT_DType op_type;
  cublasComputeType_t compute;
};
OperandFormat ChooseOperandFormat(MNT_DType a, MNT_DType b, MNT_ComputeMode mode) {
  if (mode == MNT_COMPUTE_BF16) return {MNT_DTYPE_BF16, CUBLAS_COMPUTE_32F};
  if (mode == MNT_COMPUTE_F16) return {MNT_DTYPE_F16, CUBLAS_COMPUTE_32F};
  // 16-bit values are exact in fp32 and in tf32.
  if (a == b && a != MNT_DTYPE_F32) return {a, CUBLAS_COMPUTE_32F};
  return {MNT_DTYPE_F32,
          mode == MNT_COMPUTE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
}

// A and B as cuBLASLt reads them: the tensors themselves, or scratch copies
// rounded to the compute format.
Status StageOperands(CudaBackend& b, const backend::TypedCall& call, const Operand& a,
                     const Operand& bm, const OperandFormat& format,
                     MNT_ComputeMode mode, Scratch* a_scratch, Scratch* b_scratch,
                     DevTensor* a_dev, DevTensor* b_dev) {
  const MNT_DType op_type = format.op_type;
  // TF32: the tensor cores round.
  const MNT_ComputeMode stage_mode = op_type == MNT_DTYPE_F32 ? MNT_COMPUTE_F32 : mode;
  *a_dev = Dev(a);
  *b_dev = Dev(bm);
  if (a->dtype != op_type) {
    MNT_RETURN_IF_ERROR(Stage(b, call, a, op_type, stage_mode, a_scratch, a_dev));
  }
  if (bm->dtype != op_type) {
    MNT_RETURN_IF_ERROR(Stage(b, call, bm, op_type, stage_mode, b_scratch, b_dev));
  }
  return Status::Ok();
}

Status EnsureWorkspace(CudaBackend& b) {
  if (b.gemm->workspace != nullptr) return Status::Ok();
  return b.memory.Allocate(GemmState::kWorkspaceBytes, MNT_MEMORY_WORKSPACE,
                           &b.gemm->workspace);
}

// C = beta * C (+ bias rounded to `compute`): the empty sum of K == 0.
__global__ void GemmEmptyKKernel(DevTensor c, int64_t m, int64_t n, float beta,
                                 DevTensor bias, MNT_ComputeMode compute) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < m * n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = beta != 0.0f ? Load(c, i) * beta : 0.0f;
    if (bias.data != nullptr) v += RoundToCompute(Load(bias, i % n), compute);
    Store(c, i, v);
  }
}

}  // namespace

GemmPlan& GemmPlan::operator=(GemmPlan&& other) noexcept {
  if (this != &other) {
    Release();
    op = std::exchange(other.op, nullptr);
    a = std::exchange(other.a, nullptr);
    b = std::exchange(other.b, nullptr);
    c = std::exchange(other.c, nullptr);
    algo = std::exchange(other.algo, std::nullopt);
  }
  return *this;
}

void GemmPlan::Release() {
  // Safe while a matmul that used them is still queued: cuBLASLt reads
  // descriptors when cublasLtMatmul is called, not when the kernel runs.
  if (c) cublasLtMatrixLayoutDestroy(c);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (op) cublasLtMatmulDescDestroy(op);
  op = nullptr;
  a = b = c = nullptr;
}

GemmState::~GemmState() {
  plans.Clear();
  if (lt != nullptr) cublasLtDestroy(lt);
}

Status EnsureGemmWorkspace(CudaBackend& b) { return EnsureWorkspace(b); }

Status SelectGemmAlgorithm(cublasLtHandle_t lt, const GemmPlanKey& key, GemmPlan* plan,
                           const char* op_name) {
  const std::string op = op_name;
  PreferenceHolder pref;
  MNT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref.pref),
                             op + ": cublasLtMatmulPreferenceCreate");
  const size_t ws = GemmState::kWorkspaceBytes;
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulPreferenceSetAttribute(
          pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
      op + ": cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c}};
  for (const auto& [attr, value] : aligns) {
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(pref.pref, attr, &value, sizeof(value)),
        op + ": cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      lt, plan->op, plan->a, plan->b, plan->c, plan->c, pref.pref, 1, &result, &returned);
  if (st != CUBLAS_STATUS_NOT_SUPPORTED) {
    MNT_CUBLAS_RETURN_IF_ERROR(st, op + ": cublasLtMatmulAlgoGetHeuristic");
  }
  if (st == CUBLAS_STATUS_SUCCESS && returned > 0) plan->algo = result.algo;
  return Status::Ok();
}

Status CreateGemmState(std::unique_ptr<GemmState>* out) {
  auto state = std::make_unique<GemmState>();
  MNT_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&state->lt), "Backend_Create: cublasLtCreate");
  *out = std::move(state);
  return Status::Ok();
}

Status CudaBackend::Gemm(const backend::GemmCall& g) {
  const MNT_GemmParams* p = g.params;
  const Operand &a = g.a, &bm = g.b, &c = g.c, &bias = g.bias;
  const bool ta = g.trans_a, tb = g.trans_b;
  const int64_t m = g.m, n = g.n, k = g.k;
  if (m == 0 || n == 0) return Status::Ok();
  const MNT_ComputeMode mode = p->compute;
  if (k == 0) {
    return Launched(g,
                    Launch(GemmEmptyKKernel, GridFor(m * n, kThreads), kThreads, 0, stream,
                           Dev(c), m, n, p->beta, Dev(bias), mode),
                    "gemm_empty_k");
  }

  // Operand format and cuBLAS compute type.
  const OperandFormat format = ChooseOperandFormat(a->dtype, bm->dtype, mode);
  const MNT_DType op_type = format.op_type;
  const cublasComputeType_t compute = format.compute;
  Scratch a_scratch(*this), b_scratch(*this), d_scratch(*this), bias_scratch(*this);
  DevTensor a_dev, b_dev;
  MNT_RETURN_IF_ERROR(
      StageOperands(*this, g, a, bm, format, mode, &a_scratch, &b_scratch, &a_dev, &b_dev));

  // Output: C itself when cuBLASLt supports the combination, else fp32 scratch.
  bool direct = c->dtype == MNT_DTYPE_F32 || c->dtype == op_type;
  if (bias.present() && !BiasExactIn(bias->dtype, mode, c->dtype)) direct = false;
  DevTensor d_dev = Dev(c);
  if (!direct) {
    MNT_RETURN_IF_ERROR(d_scratch.Allocate(sizeof(float) * m * n));
    d_dev = DevTensor{d_scratch.data(), MNT_DTYPE_F32};
    if (p->beta != 0.0f) {
      MNT_RETURN_IF_ERROR(Launched(
          g, LaunchConvert(stream, Dev(c), d_dev, m * n, MNT_COMPUTE_F32),
          "stage_c"));
    }
  }
  DevTensor bias_dev = Dev(bias);
  if (bias.present() && (bias->dtype != d_dev.dtype ||
                         !RoundingIsIdentity(bias->dtype, mode) ||
                         PointerAlignment(bias->data) < kBiasAlignment)) {
    MNT_RETURN_IF_ERROR(Stage(*this, g, bias, d_dev.dtype, mode, &bias_scratch, &bias_dev));
  }
  MNT_RETURN_IF_ERROR(EnsureWorkspace(*this));

  // Column-major view: D^T [n x m] = opB^T [n x k] * opA^T [k x m].
  GemmPlanKey key;
  key.m = m;
  key.n = n;
  key.k = k;
  key.trans_a = ta;
  key.trans_b = tb;
  key.operand_dtype = op_type;
  key.output_dtype = d_dev.dtype;
  key.bias_dtype = bias.present() ? bias_dev.dtype : MNT_DTYPE_INVALID;
  key.compute = static_cast<int32_t>(compute);
  key.epilogue = static_cast<int32_t>(bias.present() ? CUBLASLT_EPILOGUE_BIAS
                                                     : CUBLASLT_EPILOGUE_DEFAULT);
  key.align_a = PointerAlignment(b_dev.data);
  key.align_b = PointerAlignment(a_dev.data);
  key.align_c = PointerAlignment(d_dev.data);
  key.align_bias = bias.present() ? PointerAlignment(bias_dev.data) : 0;
  GemmPlan* plan = gemm->plans.Find(key);
  if (plan == nullptr) {
    GemmPlan fresh;
    MNT_RETURN_IF_ERROR(CreatePlan(gemm->lt, key, bias_dev.data, nullptr, &fresh));
    plan = gemm->plans.Insert(key, std::move(fresh));
  }
  if (!plan->algo.has_value()) {
    return sdk::Unimplemented(sdk::Format(
        "GEMM: cuBLASLt has no algorithm for M=%lld N=%lld K=%lld (%s operands, "
        "%s output, compute mode %d)",
        (long long)m, (long long)n, (long long)k, sdk::DTypeName(op_type),
        sdk::DTypeName(d_dev.dtype), static_cast<int>(mode)));
  }
  if (bias.present()) {
    // The one per-call attribute; its alignment is the key's, so the cached
    // algorithm holds for it.
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &bias_dev.data, sizeof(bias_dev.data)),
        "GEMM: cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  const float alpha = p->alpha, beta = p->beta;
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmul(gemm->lt, plan->op, &alpha, b_dev.data, plan->a, a_dev.data, plan->b,
                     &beta, d_dev.data, plan->c, d_dev.data, plan->c, &*plan->algo,
                     gemm->workspace, GemmState::kWorkspaceBytes, stream),
      "GEMM: cublasLtMatmul");
  if (!direct) {
    MNT_RETURN_IF_ERROR(Launched(
        g, LaunchConvert(stream, d_dev, Dev(c), m * n, MNT_COMPUTE_F32),
        "store_c"));
  }
  return Status::Ok();
}

namespace {
const char* EpilogueName(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU: return "DGELU";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    default: return "epilogue";
  }
}
}  // namespace

Status MatmulWithEpilogue(CudaBackend& be, const backend::TypedCall& call,
                          const backend::GemmProduct& g, float beta,
                          const MatmulEpilogue& ep, bool* done) {
  *done = false;
  const int64_t m = g.m, n = g.n, k = g.k;
  if (m == 0 || n == 0 || k == 0) return Status::Ok();  // the unfused path
  const OperandFormat format = ChooseOperandFormat(g.a->dtype, g.b->dtype, g.compute);
  const DevTensor d_dev = Dev(g.c);
  // Every refusal runs the unfused sequence (same result, more launches and
  // memory traffic): said once per shape and counted (slow_paths.h).
  const auto refuse = [&](const char* why) {
    be.slow_paths.Note(
        "fused GEMM epilogue refused",
        ShapeKey({static_cast<int64_t>(ep.epilogue), m, n, k, g.a->dtype, g.b->dtype,
                  d_dev.dtype}),
        [&] {
          return sdk::Format("%s M=%lld N=%lld K=%lld %s x %s -> %s", EpilogueName(ep.epilogue),
                             (long long)m, (long long)n, (long long)k,
                             sdk::DTypeName(g.a->dtype), sdk::DTypeName(g.b->dtype),
                             sdk::DTypeName(d_dev.dtype));
        },
        [&] { return std::string(why) + "; the unfused GEMM and kernels run instead"; });
    return Status::Ok();
  };
  // cuBLASLt writes D, the aux matrix and the bias gradient in D's type,
  // which must be fp32 or the operands' type; everything 16-byte aligned.
  if (d_dev.dtype != MNT_DTYPE_F32 && d_dev.dtype != format.op_type) {
    return refuse("the output is neither fp32 nor the operands' type");
  }
  if (ep.aux.data != nullptr &&
      (ep.aux.dtype != d_dev.dtype || n % 8 != 0 || !Aligned16(ep.aux.data))) {
    return refuse("the aux matrix is not in the output's type, N % 8 != 0, or it is not "
                  "16-byte aligned");
  }
  if (ep.bias.data != nullptr &&
      (ep.bias.dtype != d_dev.dtype || !Aligned16(ep.bias.data))) {
    return refuse("the bias is not in the output's type or not 16-byte aligned");
  }
  // A bias read by the forward epilogue must be exact in the compute format,
  // as GEMM stages it otherwise.
  if (ep.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
      !RoundingIsIdentity(ep.bias.dtype, g.compute)) {
    return refuse("the bias is not exact in the compute format");
  }
  if (!Aligned16(d_dev.data)) return refuse("the output is not 16-byte aligned");

  Scratch a_scratch(be), b_scratch(be);
  DevTensor a_dev, b_dev;
  MNT_RETURN_IF_ERROR(StageOperands(be, call, g.a, g.b, format, g.compute, &a_scratch,
                                    &b_scratch, &a_dev, &b_dev));
  MNT_RETURN_IF_ERROR(EnsureWorkspace(be));
  GemmPlanKey key;
  key.m = m;
  key.n = n;
  key.k = k;
  key.trans_a = g.trans_a;
  key.trans_b = g.trans_b;
  key.operand_dtype = format.op_type;
  key.output_dtype = d_dev.dtype;
  key.bias_dtype = ep.bias.data != nullptr ? ep.bias.dtype : MNT_DTYPE_INVALID;
  key.compute = static_cast<int32_t>(format.compute);
  key.epilogue = static_cast<int32_t>(ep.epilogue);
  key.aux_dtype = ep.aux.data != nullptr ? ep.aux.dtype : MNT_DTYPE_INVALID;
  key.align_a = PointerAlignment(b_dev.data);
  key.align_b = PointerAlignment(a_dev.data);
  key.align_c = PointerAlignment(d_dev.data);
  key.align_bias = ep.bias.data != nullptr ? PointerAlignment(ep.bias.data) : 0;
  key.align_aux = ep.aux.data != nullptr ? PointerAlignment(ep.aux.data) : 0;
  GemmPlan* plan = be.gemm->plans.Find(key);
  if (plan == nullptr) {
    // A configuration cuBLASLt refuses outright (an attribute or epilogue
    // it rejects for these types) is cached as "no algorithm" too: the
    // unfused sequence computes the same result.
    GemmPlan fresh;
    if (!CreatePlan(be.gemm->lt, key, ep.bias.data, ep.aux.data, &fresh).ok()) {
      fresh = GemmPlan();
    }
    plan = be.gemm->plans.Insert(key, std::move(fresh));
  }
  if (!plan->algo.has_value()) {  // cached "no algorithm"
    return refuse("cuBLASLt offers no algorithm for this epilogue and these types");
  }
  // The per-call pointers; their alignments are the key's.
  if (ep.bias.data != nullptr) {
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &ep.bias.data, sizeof(ep.bias.data)),
        "GEMM: cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  if (ep.aux.data != nullptr) {
    MNT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                       &ep.aux.data, sizeof(ep.aux.data)),
        "GEMM: cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
  }
  const float alpha = g.alpha;
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmul(be.gemm->lt, plan->op, &alpha, b_dev.data, plan->a, a_dev.data,
                     plan->b, &beta, d_dev.data, plan->c, d_dev.data, plan->c,
                     &*plan->algo, be.gemm->workspace, GemmState::kWorkspaceBytes,
                     be.stream),
      "GEMM: cublasLtMatmul");
  *done = true;
  return Status::Ok();
}

Status StridedMatmul(CudaBackend& be, const char* op_name, const StridedMatmulF32& g,
                     MNT_ComputeMode mode, bool* done) {
  *done = false;
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1 || g.batch > 0x7fffffff) {
    return sdk::Internal(sdk::Format(
        "%s: strided matmul of M=%lld N=%lld K=%lld batch=%lld (each must be >= 1)", op_name,
        (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch));
  }
  MNT_RETURN_IF_ERROR(EnsureWorkspace(be));
  constexpr int64_t kF32 = sizeof(float);
  GemmPlanKey key;
  key.m = g.m;
  key.n = g.n;
  key.k = g.k;
  key.trans_a = g.trans_a;
  key.trans_b = g.trans_b;
  key.operand_dtype = MNT_DTYPE_F32;
  key.output_dtype = MNT_DTYPE_F32;
  key.bias_dtype = MNT_DTYPE_INVALID;
  key.compute = static_cast<int32_t>(mode == MNT_COMPUTE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                              : CUBLAS_COMPUTE_32F);
  key.epilogue = static_cast<int32_t>(CUBLASLT_EPILOGUE_DEFAULT);
  // cuBLASLt's A is our B (the column-major view, as GEMM's).
  key.align_a = StridedAlignment(g.b, g.ldb * kF32, g.stride_b * kF32);
  key.align_b = StridedAlignment(g.a, g.lda * kF32, g.stride_a * kF32);
  key.align_c = StridedAlignment(g.c, g.ldc * kF32, g.stride_c * kF32);
  key.lda = g.lda;
  key.ldb = g.ldb;
  key.ldc = g.ldc;
  key.batch = g.batch;
  key.stride_a = g.stride_a;
  key.stride_b = g.stride_b;
  key.stride_c = g.stride_c;
  GemmPlan* plan = be.gemm->plans.Find(key);
  if (plan == nullptr) {
    GemmPlan fresh;
    MNT_RETURN_IF_ERROR(CreatePlan(be.gemm->lt, key, nullptr, nullptr, &fresh));
    plan = be.gemm->plans.Insert(key, std::move(fresh));
  }
  if (!plan->algo.has_value()) return Status::Ok();  // cached "no algorithm"
  MNT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmul(be.gemm->lt, plan->op, &g.alpha, g.b, plan->a, g.a, plan->b, &g.beta, g.c,
                     plan->c, g.c, plan->c, &*plan->algo, be.gemm->workspace,
                     GemmState::kWorkspaceBytes, be.stream),
      sdk::Format("%s: cublasLtMatmul (strided, M=%lld N=%lld K=%lld batch=%lld)", op_name,
                  (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch));
  *done = true;
  return Status::Ok();
}

}  // namespace mnt::cuda

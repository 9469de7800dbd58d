// The fused-epilogue GEMMs (GEMM_BIAS_GELU, GEMM_DGELU, GEMM_BIAS_GRAD) on
// the CPU: the product through the backend's own GEMM (oneDNN or the
// reference) into an fp32 host buffer, then the epilogue as one threaded
// pass over it. The epilogue reads the fp32 product, not a rounded copy, as
// cuBLASLt's does; the unfused sequence (GEMM, ACTIVATION, BIAS_GRAD) is the
// same math with the intermediate rounded into its storage dtype.
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/gelu_vector.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

constexpr int64_t kParallelEpilogue = int64_t{1} << 14;

// An F32 [m, n] tensor over host floats (the CPU backend's memory is host
// memory, so its GEMM writes there like anywhere else).
MNT_Tensor HostMatrix(std::vector<float>* v, int64_t m, int64_t n) {
  v->assign(static_cast<size_t>(m * n), 0.0f);
  MNT_Tensor t{};
  t.struct_size = MNT_Tensor_STRUCT_SIZE;
  t.data = v->data();
  t.dtype = MNT_DTYPE_F32;
  t.rank = 2;
  t.dims[0] = m;
  t.dims[1] = n;
  return t;
}

// Column sums of a row-major [rows, cols] fp32 matrix, accumulated in fp64
// in row order (BIAS_GRAD's order), into `db` (added to when accumulate).
void WriteColumnSums(const float* v, int64_t rows, int64_t cols,
                     const MNT_Tensor& db, bool accumulate) {
  std::vector<double> acc(static_cast<size_t>(cols), 0.0);
  double* a = acc.data();
#pragma omp parallel for schedule(static) if (rows * cols > kParallelEpilogue)
  for (int64_t j = 0; j < cols; ++j) {
    double s = 0.0;
    for (int64_t r = 0; r < rows; ++r) s += v[r * cols + j];
    a[j] = s;
  }
  std::vector<float> result =
      accumulate ? ReadF32(db) : std::vector<float>(static_cast<size_t>(cols), 0.0f);
  for (int64_t j = 0; j < cols; ++j) result[j] += static_cast<float>(acc[j]);
  WriteF32(result.data(), db);
}

}  // namespace

Status CpuBackend::Product(const backend::OpCall* op,
                           const backend::GemmProduct& g,
                           const backend::Operand& bias, float beta,
                           const MNT_Tensor& c) {
  backend::Operand out = g.c;
  out.tensor = &c;
  MNT_GemmParams params;
  return Gemm(backend::PlainGemmOf(op, g, bias, beta, out, &params));
}

Status CpuBackend::GemmBiasGelu(const backend::GemmBiasGeluCall& c) {
  std::vector<float> pre;
  const MNT_Tensor pre_f32 = HostMatrix(&pre, c.m, c.n);
  MNT_RETURN_IF_ERROR(Product(c.op, c, c.bias, 0.0f, pre_f32));
  std::vector<float> y(pre.size());
  const int64_t count = c.m * c.n;
  const float* p = pre.data();
  float* yv = y.data();
#pragma omp parallel for simd schedule(static) if (count > kParallelEpilogue)
  for (int64_t i = 0; i < count; ++i) yv[i] = GeluTanhVector(p[i]);
  WriteF32(pre.data(), *c.pre);
  WriteF32(y.data(), *c.c);
  return Status::Ok();
}

Status CpuBackend::GemmDgelu(const backend::GemmDgeluCall& c) {
  std::vector<float> d;
  const MNT_Tensor d_f32 = HostMatrix(&d, c.m, c.n);
  MNT_RETURN_IF_ERROR(Product(c.op, c, backend::Operand{}, 0.0f, d_f32));
  const std::vector<float> pre = ReadF32(*c.pre);
  const int64_t count = c.m * c.n;
  const float* p = pre.data();
  float* dv = d.data();
#pragma omp parallel for simd schedule(static) if (count > kParallelEpilogue)
  for (int64_t i = 0; i < count; ++i) dv[i] = GeluTanhBackwardVector(p[i], dv[i]);
  if (c.dbias.present()) {
    WriteColumnSums(d.data(), c.m, c.n, *c.dbias, c.accumulate_bias_grad);
  }
  WriteF32(d.data(), *c.c);
  return Status::Ok();
}

Status CpuBackend::GemmBiasGrad(const backend::GemmBiasGradCall& c) {
  // dbias[m] = sum over k of op(A)[m, k]: A [K, M] with trans_a (column
  // sums), A [M, K] without (row sums, as column sums of its transpose).
  const std::vector<float> a = ReadF32(*c.a);
  if (c.trans_a) {
    WriteColumnSums(a.data(), c.k, c.m, *c.dbias, c.accumulate_bias_grad);
  } else {
    std::vector<float> at(a.size());
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.k; ++j) at[j * c.m + i] = a[i * c.k + j];
    }
    WriteColumnSums(at.data(), c.k, c.m, *c.dbias, c.accumulate_bias_grad);
  }
  // The product last: C may be read (beta) and dbias is independent of it.
  return Product(c.op, c, backend::Operand{}, c.beta, *c.c);
}

}  // namespace mnt::cpu

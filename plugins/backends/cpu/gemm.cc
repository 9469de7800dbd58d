// GEMM: oneDNN's matmul (onednn_gemm.cc) unless the backend runs with
// gemm=reference, and the reference GEMM through OpenBLAS: operands rounded
// to the compute format in fp32, cblas_sgemm accumulates in fp32 (products of
// tf32/bf16/f16 values are exact in fp32, as on tensor cores), the result is
// rounded into C's dtype.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::Gemm(const backend::GemmCall& g) {
  if (g.m == 0 || g.n == 0) return Status::Ok();
  if (onednn_gemm_ != nullptr && g.k > 0) return onednn_gemm_->Run(g);
  return ReferenceGemm(g);
}

Status CpuBackend::ReferenceGemm(const backend::GemmCall& g) {
  const MNT_GemmParams* p = g.params;
  const int64_t m = g.m, n = g.n, k = g.k;

  const std::vector<float> av = ReadRounded(*g.a, p->compute);
  const std::vector<float> bv = ReadRounded(*g.b, p->compute);
  // BLAS may skip reading C when beta == 0; start from zeros so stale NaNs in
  // the output buffer never leak through.
  std::vector<float> cv =
      p->beta != 0.0f ? ReadF32(*g.c) : std::vector<float>(m * n, 0.0f);
  if (k > 0) {
    const int lda = static_cast<int>(std::max<int64_t>(1, g.a->dims[1]));
    const int ldb = static_cast<int>(std::max<int64_t>(1, g.b->dims[1]));
    cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
                g.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), p->alpha, av.data(),
                lda, bv.data(), ldb, p->beta, cv.data(), static_cast<int>(n));
  } else {
    for (float& e : cv) e *= p->beta;  // empty sum: C = beta * C
  }
  if (g.bias.present()) {
    const std::vector<float> biasv = ReadRounded(*g.bias, p->compute);
    for (int64_t i = 0; i < m; ++i) {
      float* row = cv.data() + i * n;
      for (int64_t j = 0; j < n; ++j) row[j] += biasv[j];
    }
  }
  WriteF32(cv.data(), *g.c);
  return Status::Ok();
}

}  // namespace mnt::cpu

namespace mnt::cpu {

void CpuBackend::Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                       int64_t ldc) const {
  if (onednn_gemm_ != nullptr) {
    // Row-major like cblas; the shapes were checked by the convolution's call.
    // One thread's product (callers split images or heads among threads):
    // oneDNN would otherwise take the team, and split K by its size.
    const ScopedTeam one_thread(1);
    onednn_gemm_->api()->dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b,
                                    ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

}  // namespace mnt::cpu

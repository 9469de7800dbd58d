// The fused-epilogue GEMMs (GEMM_BIAS_GELU, GEMM_DGELU, GEMM_BIAS_GRAD) on
// the CPU: the product through the backend's own GEMM (oneDNN or the
// reference), written straight into the fp32 output it feeds (pre, dpre) or,
// when that output is 16-bit, into an fp32 host buffer; then the epilogue as
// one blocked, threaded pass over it. The epilogue reads the fp32 product,
// not a rounded copy, as cuBLASLt's does; the unfused sequence (GEMM,
// ACTIVATION, BIAS_GRAD) is the same math with the intermediate rounded into
// its storage dtype.
#include <algorithm>
#include <mutex>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/column_sums.h"
#include "plugins/backends/cpu/vector_loops.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// `t` itself when it is fp32, else an F32 [m, n] tensor over *host (the CPU
// backend's memory is host memory, so its GEMM writes there like anywhere
// else). *host is `buffer`, the backend's, kept between calls: a fresh one
// (16 MiB for the 8-layer GPT's MLP) was page-faulted in by every call.
MNT_Tensor Fp32Target(const MNT_Tensor& t, int64_t m, int64_t n, std::vector<float>* buffer,
                      float** host) {
  *host = nullptr;
  if (t.dtype == MNT_DTYPE_F32) return t;
  if (buffer->size() < static_cast<size_t>(m * n)) buffer->resize(static_cast<size_t>(m * n));
  *host = buffer->data();
  MNT_Tensor h{};
  h.struct_size = MNT_Tensor_STRUCT_SIZE;
  h.data = *host;
  h.dtype = MNT_DTYPE_F32;
  h.rank = 2;
  h.dims[0] = m;
  h.dims[1] = n;
  return h;
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
  std::lock_guard<std::mutex> lock(epilogue_mu_);
  float* host = nullptr;
  const MNT_Tensor pre = Fp32Target(*c.pre, c.m, c.n, &epilogue_product_, &host);
  MNT_RETURN_IF_ERROR(Product(c.op, c, c.bias, 0.0f, pre));
  const float* p = static_cast<const float*>(pre.data);
  const MNT_Tensor& y = *c.c;
  ForBlocks(c.m * c.n, [&](int64_t off, int64_t len) {
    float buf[kBlock];
    float* yv = OutBlock(y, off, buf);
    const float* pv = p + off;
    GeluTanhLoop(pv, yv, len);
    StoreBlock(yv, y, off, len);
    if (host != nullptr) WriteF32Range(pv, *c.pre, off, len);  // pre rounded on store
  });
  return Status::Ok();
}

Status CpuBackend::GemmDgelu(const backend::GemmDgeluCall& c) {
  std::lock_guard<std::mutex> lock(epilogue_mu_);
  float* host = nullptr;
  const MNT_Tensor d = Fp32Target(*c.c, c.m, c.n, &epilogue_product_, &host);
  MNT_RETURN_IF_ERROR(Product(c.op, c, backend::Operand{}, 0.0f, d));
  float* dv = static_cast<float*>(d.data);
  const MNT_Tensor& pre = *c.pre;  // never aliases dpre
  ForBlocks(c.m * c.n, [&](int64_t off, int64_t len) {
    float buf[kBlock];
    const float* pv = InBlock(pre, off, len, buf);
    float* dd = dv + off;
    GeluTanhBackwardLoop(pv, dd, dd, len);
  });
  if (c.dbias.present()) {
    std::vector<double> acc(static_cast<size_t>(c.n), 0.0);
    SumColumns(d, c.m, c.n, acc.data());  // the fp32 values, before any rounding
    AddSums(acc.data(), c.n, *c.dbias, c.accumulate_bias_grad);
  }
  if (host != nullptr) WriteF32(dv, *c.c);
  return Status::Ok();
}

Status CpuBackend::GemmBiasGrad(const backend::GemmBiasGradCall& c) {
  // dbias[m] = sum over k of op(A)[m, k]: A [K, M] with trans_a (column
  // sums), A [M, K] without (row sums, each in double in column order as the
  // column sums of its transpose would be).
  std::vector<double> acc(static_cast<size_t>(c.m), 0.0);
  if (c.trans_a) {
    SumColumns(*c.a, c.k, c.m, acc.data());
  } else {
    const MNT_Tensor& a = *c.a;
    const int64_t k = c.k;
    const int threads = ThreadsFor(c.m * k);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      std::vector<float> buf;
#pragma omp for schedule(static)
      for (int64_t i = 0; i < c.m; ++i) {
        const float* row = InRow(a, i, k, &buf);
        double s = 0.0;
        for (int64_t j = 0; j < k; ++j) s += row[j];
        acc[i] = s;
      }
    }
  }
  AddSums(acc.data(), c.m, *c.dbias, c.accumulate_bias_grad);
  // The product last: C may be read (beta) and dbias is independent of it.
  return Product(c.op, c, backend::Operand{}, c.beta, *c.c);
}

}  // namespace mnt::cpu

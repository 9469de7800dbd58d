// GEMM_BIAS_GELU, GEMM_DGELU and GEMM_BIAS_GRAD on CUDA: one cublasLtMatmul
// with the matching epilogue (GELU_AUX_BIAS; DGELU or DGELU_BGRAD; BGRADB)
// through GEMM's cached plans (gemm.cu: MatmulWithEpilogue). cuBLASLt
// overwrites a bias gradient, so an accumulated one is summed by the
// deterministic column-sum kernel BIAS_GRAD uses instead. Where cuBLASLt
// cannot take the epilogue (dtypes, alignment, leading dimension, no
// algorithm) the unfused sequence runs: GEMM, then the GELU or dGELU pass
// (elementwise_math.h's formulas, as ACTIVATION_*), then the column sums.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/storage_types.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"
#include "plugins/backends/cuda/elementwise.h"
#include "plugins/backends/cuda/gemm.h"
#include "plugins/backends/cuda/reduce.h"

namespace mnt::cuda {

using sdk::Status;

namespace {

template <typename S>
__global__ void GeluKernel(DevTensor pre, DevTensor y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Store<S>(y, i, GeluTanh(Load<S>(pre, i)));
  }
}

// d = gelu'(pre) * d, in place.
template <typename S>
__global__ void DgeluKernel(DevTensor pre, DevTensor d, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Store<S>(d, i, GeluTanhBackward(Load<S>(pre, i), Load<S>(d, i)));
  }
}

// out[r] (+)= sum of row r of x [rows, cols]: one block per row, the sum in
// double in a fixed order (deterministic). X, O: the storage types of x and
// out.
template <typename X, typename O>
__global__ void RowSumsKernel(DevTensor x, int64_t rows, int64_t cols, DevTensor out,
                              bool accumulate) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += Load<X>(x, r * cols + j);
    sum = BlockReduce(sum, SumOp(), 0.0);
    if (threadIdx.x == 0) {
      const double base = accumulate ? Load<O>(out, r) : 0.0;
      Store<O>(out, r, static_cast<float>(base + sum));
    }
  }
}

// db (+)= the column sums of x [rows, cols] (BIAS_GRAD's kernel).
Status ColumnSums(CudaBackend& b, const backend::TypedCall& call, DevTensor x,
                  int64_t rows, int64_t cols, DevTensor db, bool accumulate) {
  if (cols == 0) return Status::Ok();
  Scratch partials(b);
  MNT_RETURN_IF_ERROR(partials.Allocate(sizeof(double) * 2 * ColumnSumChunks(rows) * cols));
  return Launched(call,
                  LaunchColumnSums(b.stream, x, DevTensor{}, nullptr, nullptr, DevTensor{},
                                   db, rows, cols, accumulate,
                                   static_cast<double*>(partials.data())),
                  "bias_grad_column_sums");
}

// The plain GEMM of a fused op's product, into `out` (with `bias` when
// present): the unfused path's first step.
Status PlainGemm(CudaBackend& b, const backend::TypedCall& call,
                 const backend::GemmProduct& g, const Operand& bias, float beta,
                 const Operand& out) {
  MNT_GemmParams params;
  return b.Gemm(backend::PlainGemmOf(call.op, g, bias, beta, out, &params));
}

}  // namespace

Status CudaBackend::GemmBiasGelu(const backend::GemmBiasGeluCall& c) {
  if (c.m == 0 || c.n == 0) return Status::Ok();
  bool done = false;
  MNT_RETURN_IF_ERROR(MatmulWithEpilogue(
      *this, c, c, 0.0f, {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, Dev(c.bias), Dev(c.pre)}, &done));
  if (done) return Status::Ok();
  MNT_RETURN_IF_ERROR(PlainGemm(*this, c, c, c.bias, 0.0f, c.pre));
  const DevTensor pre = Dev(c.pre), y = Dev(c.c);
  const int64_t n = c.m * c.n;
  const cudaError_t err = WithStorage(CommonDType({pre.dtype, y.dtype}), [&](auto storage) {
    return Launch(GeluKernel<decltype(storage)>, GridFor(n, kThreads), kThreads, 0, stream,
                  pre, y, n);
  });
  return Launched(c, err, "gemm_gelu_epilogue");
}

Status CudaBackend::GemmDgelu(const backend::GemmDgeluCall& c) {
  if (c.m == 0 || c.n == 0) {
    if (c.dbias.present() && !c.accumulate_bias_grad && c.n > 0) {
      return Launched(c, LaunchFill(stream, Dev(c.dbias), c.n, 0.0), "zero_dbias");
    }
    return Status::Ok();
  }
  const bool bgrad_in_epilogue = c.dbias.present() && !c.accumulate_bias_grad;
  MatmulEpilogue ep;
  ep.epilogue = bgrad_in_epilogue ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU;
  if (bgrad_in_epilogue) ep.bias = Dev(c.dbias);
  ep.aux = Dev(c.pre);
  bool done = false;
  MNT_RETURN_IF_ERROR(MatmulWithEpilogue(*this, c, c, 0.0f, ep, &done));
  if (!done) {
    MNT_RETURN_IF_ERROR(PlainGemm(*this, c, c, Operand{}, 0.0f, c.c));
    const DevTensor pre = Dev(c.pre), d = Dev(c.c);
    const int64_t n = c.m * c.n;
    const cudaError_t err = WithStorage(CommonDType({pre.dtype, d.dtype}), [&](auto storage) {
      return Launch(DgeluKernel<decltype(storage)>, GridFor(n, kThreads), kThreads, 0, stream,
                    pre, d, n);
    });
    MNT_RETURN_IF_ERROR(Launched(c, err, "gemm_dgelu_epilogue"));
  }
  if (!c.dbias.present() || (done && bgrad_in_epilogue)) return Status::Ok();
  return ColumnSums(*this, c, Dev(c.c), c.m, c.n, Dev(c.dbias), c.accumulate_bias_grad);
}

Status CudaBackend::GemmBiasGrad(const backend::GemmBiasGradCall& c) {
  bool done = false;
  if (!c.accumulate_bias_grad) {
    MatmulEpilogue ep;
    ep.epilogue = CUBLASLT_EPILOGUE_BGRADB;  // cuBLAS's B is our A
    ep.bias = Dev(c.dbias);
    MNT_RETURN_IF_ERROR(MatmulWithEpilogue(*this, c, c, c.beta, ep, &done));
  }
  if (done) return Status::Ok();
  // dbias first (it reads A only), then the product.
  if (c.m > 0) {
    if (c.trans_a) {  // A [K, M]: column sums
      MNT_RETURN_IF_ERROR(
          ColumnSums(*this, c, Dev(c.a), c.k, c.m, Dev(c.dbias), c.accumulate_bias_grad));
    } else {  // A [M, K]: row sums
      const DevTensor a = Dev(c.a), dbias = Dev(c.dbias);
      const cudaError_t err = WithStoragePair(a.dtype, dbias.dtype, [&](auto as, auto os) {
        return Launch(RowSumsKernel<decltype(as), decltype(os)>, RowGrid(c.m), kThreads, 0,
                      stream, a, c.m, c.k, dbias, c.accumulate_bias_grad);
      });
      MNT_RETURN_IF_ERROR(Launched(c, err, "bias_grad_row_sums"));
    }
  }
  if (c.m == 0 || c.n == 0) return Status::Ok();
  return PlainGemm(*this, c, c, Operand{}, c.beta, c.c);
}

}  // namespace mnt::cuda

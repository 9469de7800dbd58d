#include "plugins/backends/cpu/conv_1x1_backward_filter.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {
namespace {

using backend::ConvShape;
using sdk::Status;

// out[r, n*pq + j] = t[n, r, j]: the batch's [rows, pq] planes side by side.
void GatherPlanes(const uint16_t* t, int64_t images, int64_t rows, int64_t pq,
                  uint16_t* out) {
  const int64_t planes = images * rows;
  const int threads = ThreadsFor(planes * pq);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < planes; ++i) {
    const int64_t n = i / rows, r = i % rows;
    std::memcpy(out + (r * images + n) * pq, t + i * pq, static_cast<size_t>(pq) * 2);
  }
}

}  // namespace

bool Conv1x1BackwardFilter::Fits(const OneDnnGemm& gemm,
                                 const backend::Conv2dBackwardFilterCall& c) {
  const ConvShape& sh = c.shape;
  return gemm.native_bf16() && c.params->compute == MNT_COMPUTE_BF16 &&
         c.x->dtype == MNT_DTYPE_BF16 && c.dy->dtype == MNT_DTYPE_BF16 &&
         (c.dw->dtype == MNT_DTYPE_F32 || c.dw->dtype == MNT_DTYPE_BF16) && sh.r == 1 &&
         sh.s == 1 && sh.stride_h == 1 && sh.stride_w == 1 && sh.pad_h == 0 && sh.pad_w == 0 &&
         sh.dil_h == 1 && sh.dil_w == 1 && sh.groups == 1 && sh.p == sh.h && sh.q == sh.w;
}

Status Conv1x1BackwardFilter::Run(OneDnnGemm& gemm, const backend::Conv2dBackwardFilterCall& c) {
  std::lock_guard<std::mutex> lock(mu_);
  const ConvShape& sh = c.shape;
  const int64_t pq = sh.pixels(), inner = sh.n * pq;
  dy_.resize(static_cast<size_t>(sh.k * inner));
  x_.resize(static_cast<size_t>(sh.c * inner));
  GatherPlanes(static_cast<const uint16_t*>(c.dy->data), sh.n, sh.k, pq, dy_.data());
  GatherPlanes(static_cast<const uint16_t*>(c.x->data), sh.n, sh.c, pq, x_.data());
  float* out = ResultTarget(*c.dw, c.accumulate, &result_);
  const int64_t a_dims[2] = {sh.k, inner}, b_dims[2] = {sh.c, inner}, c_dims[2] = {sh.k, sh.c};
  const MNT_Tensor a = sdk::MakeTensor(dy_.data(), MNT_DTYPE_BF16, 2, a_dims);
  const MNT_Tensor b = sdk::MakeTensor(x_.data(), MNT_DTYPE_BF16, 2, b_dims);
  const MNT_Tensor dw = sdk::MakeTensor(out, MNT_DTYPE_F32, 2, c_dims);
  MNT_GemmParams params{};
  params.struct_size = MNT_GemmParams_STRUCT_SIZE;
  params.trans_b = 1;
  params.alpha = 1.0f;
  params.compute = MNT_COMPUTE_BF16;
  backend::GemmCall g;
  g.op = c.op;
  g.params = &params;
  g.a.tensor = &a;
  g.b.tensor = &b;
  g.c.tensor = &dw;
  g.trans_b = true;
  g.m = sh.k;
  g.n = sh.c;
  g.k = inner;
  MNT_RETURN_IF_ERROR(gemm.Run(g));
  StoreResult(out, *c.dw, c.accumulate, &sum_);
  return Status::Ok();
}

}  // namespace mnt::cpu

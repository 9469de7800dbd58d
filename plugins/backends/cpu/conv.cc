// 2-D convolution (ABI 1.3), NCHW: oneDNN's convolution primitives when it
// is the GEMM engine (onednn_conv.cc), else, and for any geometry oneDNN has
// no primitive for, im2col + sgemm per image and group (the reference path;
// CpuBackend::Sgemm). Operands are rounded to the compute format first,
// exactly as GEMM does, so the fp32 sgemm computes what a tensor core would.
//   forward:        y_g[Kg, PQ]      = w_g[Kg, CgRS] @ col(x_g)[CgRS, PQ]
//   backward data:  dcol[CgRS, PQ]   = w_g^T @ dy_g, then col2im into dx
//   backward filter dw_g[Kg, CgRS] (+)= dy_g @ col(x_g)^T
#include <algorithm>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using backend::ConvShape;
using sdk::Status;

namespace {

// col[CgRS, PQ] of one image's group `g` (x points at the image).
void Im2Col(const ConvShape& sh, const float* x, int64_t g, float* col) {
  const int64_t pq = sh.pixels();
  for (int64_t c = 0; c < sh.cg; ++c) {
    const float* plane = x + (g * sh.cg + c) * sh.h * sh.w;
    for (int64_t r = 0; r < sh.r; ++r) {
      for (int64_t s = 0; s < sh.s; ++s) {
        float* row = col + ((c * sh.r + r) * sh.s + s) * pq;
        for (int64_t p = 0; p < sh.p; ++p) {
          const int64_t ih = p * sh.stride_h - sh.pad_h + r * sh.dil_h;
          float* out = row + p * sh.q;
          if (ih < 0 || ih >= sh.h) {
            std::fill(out, out + sh.q, 0.0f);
            continue;
          }
          for (int64_t q = 0; q < sh.q; ++q) {
            const int64_t iw = q * sh.stride_w - sh.pad_w + s * sh.dil_w;
            out[q] = (iw < 0 || iw >= sh.w) ? 0.0f : plane[ih * sh.w + iw];
          }
        }
      }
    }
  }
}

// Adds col[CgRS, PQ] back into one image's group `g` of dx.
void Col2ImAdd(const ConvShape& sh, const float* col, int64_t g, float* dx) {
  const int64_t pq = sh.pixels();
  for (int64_t c = 0; c < sh.cg; ++c) {
    float* plane = dx + (g * sh.cg + c) * sh.h * sh.w;
    for (int64_t r = 0; r < sh.r; ++r) {
      for (int64_t s = 0; s < sh.s; ++s) {
        const float* row = col + ((c * sh.r + r) * sh.s + s) * pq;
        for (int64_t p = 0; p < sh.p; ++p) {
          const int64_t ih = p * sh.stride_h - sh.pad_h + r * sh.dil_h;
          if (ih < 0 || ih >= sh.h) continue;
          for (int64_t q = 0; q < sh.q; ++q) {
            const int64_t iw = q * sh.stride_w - sh.pad_w + s * sh.dil_w;
            if (iw >= 0 && iw < sh.w) plane[ih * sh.w + iw] += row[p * sh.q + q];
          }
        }
      }
    }
  }
}

// dbias (+)= the sum of the unrounded dy over images and pixels, in double
// (a reduction, not a product), channels split over the threads.
void BiasGradient(const backend::Conv2dBackwardFilterCall& c) {
  const ConvShape& sh = c.shape;
  const int64_t pq = sh.pixels();
  const std::vector<float> raw = ReadF32(*c.dy);
  std::vector<float> dbv = c.accumulate ? ReadF32(*c.dbias) : std::vector<float>(sh.k, 0.0f);
  const int threads = ThreadsFor(sh.n * sh.k * pq);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t k = 0; k < sh.k; ++k) {
    double sum = 0.0;
    for (int64_t n = 0; n < sh.n; ++n) {
      const float* plane = raw.data() + (n * sh.k + k) * pq;
      for (int64_t i = 0; i < pq; ++i) sum += plane[i];
    }
    dbv[k] += static_cast<float>(sum);
  }
  WriteF32(dbv.data(), *c.dbias);
}

}  // namespace

Status CpuBackend::Conv2dForward(const backend::Conv2dForwardCall& c) {
  if (onednn_conv_ != nullptr) {
    bool done = false;
    MNT_RETURN_IF_ERROR(onednn_conv_->Forward(c, &done));
    if (done) return Status::Ok();
  }
  const ConvShape& sh = c.shape;
  const std::vector<float> xv = ReadRounded(*c.x, c.params->compute);
  const std::vector<float> wv = ReadRounded(*c.w, c.params->compute);
  const std::vector<float> bv =
      c.bias.present() ? ReadF32(*c.bias) : std::vector<float>(sh.k, 0.0f);
  std::vector<float> yv(static_cast<size_t>(sdk::NumElements(*c.y)));
  const int64_t pq = sh.pixels();
  // Images in parallel, each sgemm on one thread (small products thread
  // badly); every image is written by one thread.
  const int threads = std::min<int64_t>(sh.n, ThreadsFor(sh.n * sh.k * pq));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> col(static_cast<size_t>(sh.patch() * pq));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < sh.n; ++n) {
      const float* xn = xv.data() + n * sh.c * sh.h * sh.w;
      float* yn = yv.data() + n * sh.k * pq;
      for (int64_t g = 0; g < sh.groups; ++g) {
        Im2Col(sh, xn, g, col.data());
        Sgemm(false, false, sh.kg, pq, sh.patch(), wv.data() + g * sh.kg * sh.patch(),
              sh.patch(), col.data(), pq, 0.0f, yn + g * sh.kg * pq, pq);
      }
      for (int64_t k = 0; k < sh.k; ++k) {
        for (int64_t i = 0; i < pq; ++i) yn[k * pq + i] += bv[k];
      }
    }
  }
  WriteF32(yv.data(), *c.y);
  return Status::Ok();
}

Status CpuBackend::Conv2dBackwardData(const backend::Conv2dBackwardDataCall& c) {
  if (onednn_conv_ != nullptr) {
    bool done = false;
    MNT_RETURN_IF_ERROR(onednn_conv_->BackwardData(c, &done));
    if (done) return Status::Ok();
  }
  const ConvShape& sh = c.shape;
  const std::vector<float> dyv = ReadRounded(*c.dy, c.params->compute);
  const std::vector<float> wv = ReadRounded(*c.w, c.params->compute);
  std::vector<float> dxv = c.accumulate
                               ? ReadF32(*c.dx)
                               : std::vector<float>(sdk::NumElements(*c.dx), 0.0f);
  const int64_t pq = sh.pixels();
  const int threads = std::min<int64_t>(sh.n, ThreadsFor(sh.n * sh.c * sh.h * sh.w));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> col(static_cast<size_t>(sh.patch() * pq));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < sh.n; ++n) {
      const float* dyn = dyv.data() + n * sh.k * pq;
      float* dxn = dxv.data() + n * sh.c * sh.h * sh.w;
      for (int64_t g = 0; g < sh.groups; ++g) {
        Sgemm(true, false, sh.patch(), pq, sh.kg, wv.data() + g * sh.kg * sh.patch(),
              sh.patch(), dyn + g * sh.kg * pq, pq, 0.0f, col.data(), pq);
        Col2ImAdd(sh, col.data(), g, dxn);
      }
    }
  }
  WriteF32(dxv.data(), *c.dx);
  return Status::Ok();
}

Status CpuBackend::Conv2dBackwardFilter(const backend::Conv2dBackwardFilterCall& c) {
  if (onednn_gemm_ != nullptr && Conv1x1BackwardFilter::Fits(*onednn_gemm_, c)) {
    MNT_RETURN_IF_ERROR(conv_1x1_backward_filter_.Run(*onednn_gemm_, c));
    if (c.dbias.present()) BiasGradient(c);
    return Status::Ok();
  }
  if (onednn_conv_ != nullptr) {
    bool done = false, bias_done = false;
    MNT_RETURN_IF_ERROR(onednn_conv_->BackwardFilter(c, &done, &bias_done));
    if (done) {
      if (c.dbias.present() && !bias_done) BiasGradient(c);
      return Status::Ok();
    }
  }
  const ConvShape& sh = c.shape;
  const std::vector<float> dyv = ReadRounded(*c.dy, c.params->compute);
  const std::vector<float> xv = ReadRounded(*c.x, c.params->compute);
  // Per-image products summed in fp32 by sgemm's beta = 1, within fixed
  // chunks of images that threads take whole; the chunks' sums are then
  // added in order, so the result does not depend on the thread count.
  constexpr int64_t kImagesPerChunk = 8;
  const size_t dw_size = static_cast<size_t>(sdk::NumElements(*c.dw));
  const int64_t chunks = (sh.n + kImagesPerChunk - 1) / kImagesPerChunk;
  std::vector<float> partial(static_cast<size_t>(chunks) * dw_size, 0.0f);
  const int64_t pq = sh.pixels();
  const int threads = std::min<int64_t>(chunks, ThreadsFor(sh.n * sh.k * pq));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> col(static_cast<size_t>(sh.patch() * pq));
#pragma omp for schedule(static)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      float* dw = partial.data() + ch * dw_size;
      const int64_t end = std::min(sh.n, (ch + 1) * kImagesPerChunk);
      for (int64_t n = ch * kImagesPerChunk; n < end; ++n) {
        const float* xn = xv.data() + n * sh.c * sh.h * sh.w;
        const float* dyn = dyv.data() + n * sh.k * pq;
        for (int64_t g = 0; g < sh.groups; ++g) {
          Im2Col(sh, xn, g, col.data());
          Sgemm(false, true, sh.kg, sh.patch(), pq, dyn + g * sh.kg * pq, pq, col.data(), pq,
                1.0f, dw + g * sh.kg * sh.patch(), sh.patch());
        }
      }
    }
  }
  std::vector<float> dwv(dw_size, 0.0f);
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const float* p = partial.data() + ch * dw_size;
    for (size_t i = 0; i < dw_size; ++i) dwv[i] += p[i];
  }
  if (c.accumulate) {
    const std::vector<float> old = ReadF32(*c.dw);
    for (size_t i = 0; i < dwv.size(); ++i) dwv[i] += old[i];
  }
  WriteF32(dwv.data(), *c.dw);
  if (c.dbias.present()) BiasGradient(c);
  return Status::Ok();
}

}  // namespace mnt::cpu

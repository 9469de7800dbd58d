// 2-D convolution (ABI 1.3), NCHW, as im2col + OpenBLAS sgemm per image and
// group. Operands are rounded to the compute format first, exactly as
// GEMM does, so the fp32 sgemm computes what a tensor core would.
//   forward:        y_g[Kg, PQ]      = w_g[Kg, CgRS] @ col(x_g)[CgRS, PQ]
//   backward data:  dcol[CgRS, PQ]   = w_g^T @ dy_g, then col2im into dx
//   backward filter dw_g[Kg, CgRS] (+)= dy_g @ col(x_g)^T
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t k, r, s;     // filters
  int64_t p, q;        // output
  int64_t groups, cg, kg;
  int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;

  int64_t patch() const { return cg * r * s; }  // rows of col
  int64_t pixels() const { return p * q; }      // columns of col
};

int64_t OutSize(int64_t in, int64_t pad, int64_t dil, int64_t window,
                int64_t stride) {
  const int64_t span = in + 2 * pad - dil * (window - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

Status ReadParams(const OpCall& call, const MNT_Conv2dParams** p) {
  MNT_RETURN_IF_ERROR(call.Params("MNT_Conv2dParams",
                                  MNT_Conv2dParams_STRUCT_SIZE, false, p));
  const MNT_Conv2dParams& c = **p;
  if (c.pad_h < 0 || c.pad_w < 0 || c.stride_h < 1 || c.stride_w < 1 ||
      c.dilation_h < 1 || c.dilation_w < 1 || c.groups < 1) {
    return call.Invalid(sdk::Format(
        "pad %dx%d, stride %dx%d, dilation %dx%d, groups %d: expected pad >= "
        "0, stride, dilation and groups >= 1",
        c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
        c.groups));
  }
  if (c.compute < MNT_COMPUTE_F32 || c.compute > MNT_COMPUTE_F16) {
    return call.Invalid(
        sdk::Format("unknown compute mode %d", static_cast<int>(c.compute)));
  }
  return Status::Ok();
}

// Fills the shape from x [N,C,H,W] and w [K,C/g,R,S], checks both and the
// resulting y [N,K,P,Q] (when `y` is given).
Status ResolveShape(const OpCall& call, const MNT_Conv2dParams& p,
                    const Operand& x, const Operand& w, ConvShape* sh) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRank(x, 4));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(w));
  MNT_RETURN_IF_ERROR(call.ExpectRank(w, 4));
  *sh = ConvShape{};
  sh->n = x->dims[0], sh->c = x->dims[1], sh->h = x->dims[2], sh->w = x->dims[3];
  sh->k = w->dims[0], sh->r = w->dims[2], sh->s = w->dims[3];
  sh->groups = p.groups;
  sh->pad_h = p.pad_h, sh->pad_w = p.pad_w;
  sh->stride_h = p.stride_h, sh->stride_w = p.stride_w;
  sh->dil_h = p.dilation_h, sh->dil_w = p.dilation_w;
  if (sh->c % sh->groups != 0 || sh->k % sh->groups != 0) {
    return call.Invalid(sdk::Format(
        "channels C=%lld and filters K=%lld must divide by groups=%lld",
        (long long)sh->c, (long long)sh->k, (long long)sh->groups));
  }
  sh->cg = sh->c / sh->groups;
  sh->kg = sh->k / sh->groups;
  if (w->dims[1] != sh->cg) {
    return call.Invalid(w.label + " is " + sdk::Describe(*w) +
                        sdk::Format(", expected [K, C/groups=%lld, R, S]",
                                    (long long)sh->cg));
  }
  if (sh->r < 1 || sh->s < 1) {
    return call.Invalid(w.label + " has an empty filter window");
  }
  sh->p = OutSize(sh->h, sh->pad_h, sh->dil_h, sh->r, sh->stride_h);
  sh->q = OutSize(sh->w, sh->pad_w, sh->dil_w, sh->s, sh->stride_w);
  if (sh->p < 1 || sh->q < 1) {
    return call.Invalid(sdk::Format(
        "the %lldx%lld filter (dilation %lldx%lld) does not fit the padded "
        "%lldx%lld input",
        (long long)sh->r, (long long)sh->s, (long long)sh->dil_h,
        (long long)sh->dil_w, (long long)sh->h, (long long)sh->w));
  }
  return Status::Ok();
}

Status ExpectNchw(const OpCall& call, const Operand& t, int64_t n, int64_t c,
                  int64_t h, int64_t w, const char* names) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[4] = {n, c, h, w};
  return call.ExpectDims(t, 4, dims,
                         sdk::Format("[%s] = [%lld, %lld, %lld, %lld]", names,
                                     (long long)n, (long long)c, (long long)h,
                                     (long long)w));
}

std::vector<float> ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode) {
  std::vector<float> v = ReadF32(t);
  if (mode != MNT_COMPUTE_F32) {
    for (float& e : v) e = RoundToCompute(e, mode);
  }
  return v;
}

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

// Row-major C[m,n] = alpha op(A) op(B) + beta C.
void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

}  // namespace

Status RunConv2dForward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 3, 1, 1));
  const MNT_Conv2dParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  Operand x, w, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Input(1, "w", &w));
  const Operand bias = call.OptionalInput(2, "bias");
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  ConvShape sh;
  MNT_RETURN_IF_ERROR(ResolveShape(call, *p, x, w, &sh));
  MNT_RETURN_IF_ERROR(ExpectNchw(call, y, sh.n, sh.k, sh.p, sh.q, "N, K, P, Q"));
  if (bias.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(bias));
    MNT_RETURN_IF_ERROR(call.ExpectDims(bias, 1, &sh.k,
                                        sdk::Format("[K=%lld]", (long long)sh.k)));
  }
  const std::vector<float> xv = ReadRounded(*x, p->compute);
  const std::vector<float> wv = ReadRounded(*w, p->compute);
  const std::vector<float> bv =
      bias.present() ? ReadF32(*bias) : std::vector<float>(sh.k, 0.0f);
  std::vector<float> yv(static_cast<size_t>(sdk::NumElements(*y)));
  std::vector<float> col(static_cast<size_t>(sh.patch() * sh.pixels()));
  const int64_t pq = sh.pixels();
  for (int64_t n = 0; n < sh.n; ++n) {
    const float* xn = xv.data() + n * sh.c * sh.h * sh.w;
    float* yn = yv.data() + n * sh.k * pq;
    for (int64_t g = 0; g < sh.groups; ++g) {
      Im2Col(sh, xn, g, col.data());
      Sgemm(false, false, sh.kg, pq, sh.patch(),
            wv.data() + g * sh.kg * sh.patch(), sh.patch(), col.data(), pq,
            0.0f, yn + g * sh.kg * pq, pq);
    }
    for (int64_t k = 0; k < sh.k; ++k) {
      for (int64_t i = 0; i < pq; ++i) yn[k * pq + i] += bv[k];
    }
  }
  WriteF32(yv.data(), *y);
  return Status::Ok();
}

Status RunConv2dBackwardData(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_Conv2dParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  Operand dy, w, dx;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "w", &w));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  ConvShape sh;
  MNT_RETURN_IF_ERROR(ResolveShape(call, *p, dx, w, &sh));
  MNT_RETURN_IF_ERROR(ExpectNchw(call, dy, sh.n, sh.k, sh.p, sh.q, "N, K, P, Q"));
  const std::vector<float> dyv = ReadRounded(*dy, p->compute);
  const std::vector<float> wv = ReadRounded(*w, p->compute);
  std::vector<float> dxv = p->accumulate
                               ? ReadF32(*dx)
                               : std::vector<float>(sdk::NumElements(*dx), 0.0f);
  std::vector<float> col(static_cast<size_t>(sh.patch() * sh.pixels()));
  const int64_t pq = sh.pixels();
  for (int64_t n = 0; n < sh.n; ++n) {
    const float* dyn = dyv.data() + n * sh.k * pq;
    float* dxn = dxv.data() + n * sh.c * sh.h * sh.w;
    for (int64_t g = 0; g < sh.groups; ++g) {
      Sgemm(true, false, sh.patch(), pq, sh.kg,
            wv.data() + g * sh.kg * sh.patch(), sh.patch(),
            dyn + g * sh.kg * pq, pq, 0.0f, col.data(), pq);
      Col2ImAdd(sh, col.data(), g, dxn);
    }
  }
  WriteF32(dxv.data(), *dx);
  return Status::Ok();
}

Status RunConv2dBackwardFilter(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 2));
  const MNT_Conv2dParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  Operand dy, x, dw;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "dw", &dw));
  const Operand dbias = call.OptionalOutput(1, "dbias");
  ConvShape sh;
  MNT_RETURN_IF_ERROR(ResolveShape(call, *p, x, dw, &sh));
  MNT_RETURN_IF_ERROR(ExpectNchw(call, dy, sh.n, sh.k, sh.p, sh.q, "N, K, P, Q"));
  if (dbias.present()) {
    MNT_RETURN_IF_ERROR(call.ExpectFloat(dbias));
    MNT_RETURN_IF_ERROR(call.ExpectDims(
        dbias, 1, &sh.k, sdk::Format("[K=%lld]", (long long)sh.k)));
  }
  const std::vector<float> dyv = ReadRounded(*dy, p->compute);
  const std::vector<float> xv = ReadRounded(*x, p->compute);
  // Per-image products summed in fp32 by sgemm's beta = 1.
  std::vector<float> dwv(static_cast<size_t>(sdk::NumElements(*dw)), 0.0f);
  std::vector<float> col(static_cast<size_t>(sh.patch() * sh.pixels()));
  const int64_t pq = sh.pixels();
  for (int64_t n = 0; n < sh.n; ++n) {
    const float* xn = xv.data() + n * sh.c * sh.h * sh.w;
    const float* dyn = dyv.data() + n * sh.k * pq;
    for (int64_t g = 0; g < sh.groups; ++g) {
      Im2Col(sh, xn, g, col.data());
      Sgemm(false, true, sh.kg, sh.patch(), pq, dyn + g * sh.kg * pq, pq,
            col.data(), pq, 1.0f, dwv.data() + g * sh.kg * sh.patch(),
            sh.patch());
    }
  }
  if (p->accumulate) {
    const std::vector<float> old = ReadF32(*dw);
    for (size_t i = 0; i < dwv.size(); ++i) dwv[i] += old[i];
  }
  WriteF32(dwv.data(), *dw);
  if (dbias.present()) {
    // Unrounded dy, summed in double: a reduction, not a product.
    const std::vector<float> raw = ReadF32(*dy);
    std::vector<float> dbv = p->accumulate
                                 ? ReadF32(*dbias)
                                 : std::vector<float>(sh.k, 0.0f);
    for (int64_t k = 0; k < sh.k; ++k) {
      double sum = 0.0;
      for (int64_t n = 0; n < sh.n; ++n) {
        const float* plane = raw.data() + (n * sh.k + k) * pq;
        for (int64_t i = 0; i < pq; ++i) sum += plane[i];
      }
      dbv[k] += static_cast<float>(sum);
    }
    WriteF32(dbv.data(), *dbias);
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

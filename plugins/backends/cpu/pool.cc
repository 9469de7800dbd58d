// 2-D max/average pooling (ABI 1.3), NCHW. Max pooling's backward
// recomputes each window's argmax from x (first maximum in row-major window
// order), so no index tensor has to be kept between the passes.
#include <algorithm>
#include <limits>
#include <vector>

#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

struct PoolShape {
  int64_t planes, h, w, p, q;  // planes = N * C
};

Status ReadParams(const OpCall& call, const MNT_Pool2dParams** out) {
  MNT_RETURN_IF_ERROR(call.Params("MNT_Pool2dParams",
                                  MNT_Pool2dParams_STRUCT_SIZE, false, out));
  const MNT_Pool2dParams& p = **out;
  if (p.kind != MNT_POOL_MAX && p.kind != MNT_POOL_AVG) {
    return call.Invalid(
        sdk::Format("unknown pool kind %d", static_cast<int>(p.kind)));
  }
  if (p.window_h < 1 || p.window_w < 1 || p.stride_h < 1 || p.stride_w < 1 ||
      p.pad_h < 0 || p.pad_w < 0 || p.pad_h >= p.window_h ||
      p.pad_w >= p.window_w) {
    return call.Invalid(sdk::Format(
        "window %dx%d, stride %dx%d, pad %dx%d: expected window, stride >= 1 "
        "and 0 <= pad < window",
        p.window_h, p.window_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w));
  }
  return Status::Ok();
}

Status Resolve(const OpCall& call, const MNT_Pool2dParams& p, const Operand& x,
               const Operand& y, const char* y_name, PoolShape* sh) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(x));
  MNT_RETURN_IF_ERROR(call.ExpectRank(x, 4));
  sh->planes = x->dims[0] * x->dims[1];
  sh->h = x->dims[2];
  sh->w = x->dims[3];
  const int64_t span_h = sh->h + 2 * p.pad_h - p.window_h;
  const int64_t span_w = sh->w + 2 * p.pad_w - p.window_w;
  if (span_h < 0 || span_w < 0) {
    return call.Invalid(sdk::Format(
        "the %dx%d window does not fit the padded %lldx%lld input",
        p.window_h, p.window_w, (long long)sh->h, (long long)sh->w));
  }
  sh->p = span_h / p.stride_h + 1;
  sh->q = span_w / p.stride_w + 1;
  MNT_RETURN_IF_ERROR(call.ExpectFloat(y));
  const int64_t dims[4] = {x->dims[0], x->dims[1], sh->p, sh->q};
  return call.ExpectDims(
      y, 4, dims,
      sdk::Format("%s [N, C, P, Q] = [%lld, %lld, %lld, %lld]", y_name,
                  (long long)dims[0], (long long)dims[1], (long long)sh->p,
                  (long long)sh->q));
}

// The in-image part [h0, h1) x [w0, w1) of output (p, q)'s window.
struct Window {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

Window WindowAt(const MNT_Pool2dParams& prm, const PoolShape& sh, int64_t p,
                int64_t q) {
  const int64_t hs = p * prm.stride_h - prm.pad_h;
  const int64_t ws = q * prm.stride_w - prm.pad_w;
  Window win;
  win.h0 = std::max<int64_t>(hs, 0);
  win.h1 = std::min<int64_t>(hs + prm.window_h, sh.h);
  win.w0 = std::max<int64_t>(ws, 0);
  win.w1 = std::min<int64_t>(ws + prm.window_w, sh.w);
  win.divisor = prm.count_include_pad
                    ? int64_t{prm.window_h} * prm.window_w
                    : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

// Index (within the plane) of the first maximum of the window.
int64_t ArgMax(const float* plane, const PoolShape& sh, const Window& win) {
  int64_t best = win.h0 * sh.w + win.w0;
  for (int64_t i = win.h0; i < win.h1; ++i) {
    for (int64_t j = win.w0; j < win.w1; ++j) {
      const float v = plane[i * sh.w + j];
      // NaN propagates: a NaN beats everything, as torch's max pooling.
      if (v > plane[best] || (v != v && plane[best] == plane[best])) {
        best = i * sh.w + j;
      }
    }
  }
  return best;
}

}  // namespace

Status RunPool2dForward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 1, 1));
  const MNT_Pool2dParams* prm;
  MNT_RETURN_IF_ERROR(ReadParams(call, &prm));
  Operand x, y;
  MNT_RETURN_IF_ERROR(call.Input(0, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  PoolShape sh;
  MNT_RETURN_IF_ERROR(Resolve(call, *prm, x, y, "y", &sh));
  const std::vector<float> xv = ReadF32(*x);
  std::vector<float> yv(static_cast<size_t>(sh.planes * sh.p * sh.q));
  for (int64_t c = 0; c < sh.planes; ++c) {
    const float* plane = xv.data() + c * sh.h * sh.w;
    for (int64_t p = 0; p < sh.p; ++p) {
      for (int64_t q = 0; q < sh.q; ++q) {
        const Window win = WindowAt(*prm, sh, p, q);
        float out;
        if (prm->kind == MNT_POOL_MAX) {
          out = plane[ArgMax(plane, sh, win)];
        } else {
          double sum = 0.0;
          for (int64_t i = win.h0; i < win.h1; ++i) {
            for (int64_t j = win.w0; j < win.w1; ++j) sum += plane[i * sh.w + j];
          }
          out = static_cast<float>(sum / static_cast<double>(win.divisor));
        }
        yv[(c * sh.p + p) * sh.q + q] = out;
      }
    }
  }
  WriteF32(yv.data(), *y);
  return Status::Ok();
}

Status RunPool2dBackward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(2, 2, 1, 1));
  const MNT_Pool2dParams* prm;
  MNT_RETURN_IF_ERROR(ReadParams(call, &prm));
  Operand dy, x, dx;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "x", &x));
  MNT_RETURN_IF_ERROR(call.Output(0, "dx", &dx));
  PoolShape sh;
  MNT_RETURN_IF_ERROR(Resolve(call, *prm, x, dy, "dy", &sh));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dx));
  MNT_RETURN_IF_ERROR(call.ExpectDims(dx, 4, x->dims, sdk::Describe(*x)));
  const std::vector<float> xv = ReadF32(*x), dyv = ReadF32(*dy);
  std::vector<float> dxv(xv.size(), 0.0f);
  for (int64_t c = 0; c < sh.planes; ++c) {
    const float* plane = xv.data() + c * sh.h * sh.w;
    float* grad = dxv.data() + c * sh.h * sh.w;
    for (int64_t p = 0; p < sh.p; ++p) {
      for (int64_t q = 0; q < sh.q; ++q) {
        const Window win = WindowAt(*prm, sh, p, q);
        const float g = dyv[(c * sh.p + p) * sh.q + q];
        if (prm->kind == MNT_POOL_MAX) {
          grad[ArgMax(plane, sh, win)] += g;
        } else {
          const float share = g / static_cast<float>(win.divisor);
          for (int64_t i = win.h0; i < win.h1; ++i) {
            for (int64_t j = win.w0; j < win.w1; ++j) grad[i * sh.w + j] += share;
          }
        }
      }
    }
  }
  WriteF32(dxv.data(), *dx);
  return Status::Ok();
}

}  // namespace mnt::cpu

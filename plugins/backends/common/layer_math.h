// Per-element math of the layer ops, shared by the CPU backend and the CUDA
// kernels: pooling windows and their argmax (both backends' pool files), the
// batch-norm input gradient and the attention softmax gradient (the CPU
// reference, batchnorm.cc and attention.cc, writes these out in double).
// Host/device, fp32 unless noted.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_LAYER_MATH_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_LAYER_MATH_H_

#include <cstdint>

#include "plugins/backends/common/host_device.h"

namespace mnt {

// ---- Pooling -----------------------------------------------------------------

// Geometry of one pooling call along both axes (NCHW planes).
struct PoolGeometry {
  int64_t h, w;          // input plane
  int64_t p, q;          // output plane
  int32_t window_h, window_w, stride_h, stride_w, pad_h, pad_w;
  int32_t count_include_pad;
};

// The in-image part [h0, h1) x [w0, w1) of output (p, q)'s window and the
// average's divisor.
struct PoolWindow {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

MNT_HOST_DEVICE inline int64_t PoolMax64(int64_t a, int64_t b) { return a > b ? a : b; }
MNT_HOST_DEVICE inline int64_t PoolMin64(int64_t a, int64_t b) { return a < b ? a : b; }

MNT_HOST_DEVICE inline PoolWindow PoolWindowAt(const PoolGeometry& g, int64_t p,
                                               int64_t q) {
  const int64_t hs = p * g.stride_h - g.pad_h;
  const int64_t ws = q * g.stride_w - g.pad_w;
  PoolWindow win;
  win.h0 = PoolMax64(hs, 0);
  win.h1 = PoolMin64(hs + g.window_h, g.h);
  win.w0 = PoolMax64(ws, 0);
  win.w1 = PoolMin64(ws + g.window_w, g.w);
  win.divisor = g.count_include_pad ? int64_t{g.window_h} * g.window_w
                                    : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

// Index within the plane of the window's first maximum in row-major order; a
// NaN beats everything (torch's max pooling). `load(i)` reads plane element i.
template <typename Load>
MNT_HOST_DEVICE int64_t PoolArgMax(const Load& load, int64_t plane_w,
                                   const PoolWindow& win) {
  int64_t best = win.h0 * plane_w + win.w0;
  float best_v = load(best);
  for (int64_t i = win.h0; i < win.h1; ++i) {
    for (int64_t j = win.w0; j < win.w1; ++j) {
      const float v = load(i * plane_w + j);
      if (v > best_v || (v != v && best_v == best_v)) {
        best = i * plane_w + j;
        best_v = v;
      }
    }
  }
  return best;
}

// Outputs along one axis whose window covers input index `i`:
// [*first, *last] (empty when *first > *last). Windows start at
// o * stride - pad and span `window` elements.
MNT_HOST_DEVICE inline void PoolCoveringRange(int64_t i, int64_t window,
                                              int64_t stride, int64_t pad,
                                              int64_t outputs, int64_t* first,
                                              int64_t* last) {
  // o * stride - pad <= i  and  o * stride - pad + window > i.
  const int64_t hi = i + pad;  // o <= hi / stride
  const int64_t lo = hi - window + 1;  // o >= ceil(lo / stride)
  *last = PoolMin64(hi / stride, outputs - 1);
  *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
}

// ---- Batch norm -----------------------------------------------------------------

// dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), in double
// as the CPU reference.
MNT_HOST_DEVICE inline float BatchNormInputGrad(float dy, float x, float mean,
                                                float invstd, float gamma,
                                                double mean_dy,
                                                double mean_dy_xhat) {
  const double xhat = (x - mean) * static_cast<double>(invstd);
  const double k = static_cast<double>(gamma) * invstd;
  return static_cast<float>(k * (dy - mean_dy - xhat * mean_dy_xhat));
}

// ---- Attention ----------------------------------------------------------------

// Gradient of one scaled score: p * (dy.v - dy.y), with
// p = exp(score - lse) recomputed from the saved logsumexp.
MNT_HOST_DEVICE inline float AttentionScoreGrad(float prob, float dy_dot_v,
                                                float dy_dot_y) {
  return prob * (dy_dot_v - dy_dot_y);
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_LAYER_MATH_H_

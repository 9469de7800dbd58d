// 2-D max/average pooling (ABI 1.3), NCHW. Max pooling's backward
// recomputes each window's argmax from x (first maximum in row-major window
// order), so no index tensor has to be kept between the passes. Window
// geometry and argmax are layer_math.h's, the same functions the CUDA
// kernels run.
#include <vector>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::Pool2dForward(const backend::Pool2dForwardCall& c) {
  const PoolGeometry& g = c.geometry;
  const std::vector<float> xv = ReadF32(*c.x);
  std::vector<float> yv(static_cast<size_t>(c.planes * g.p * g.q));
  for (int64_t plane = 0; plane < c.planes; ++plane) {
    const float* x = xv.data() + plane * g.h * g.w;
    const auto load = [x](int64_t i) { return x[i]; };
    for (int64_t p = 0; p < g.p; ++p) {
      for (int64_t q = 0; q < g.q; ++q) {
        const PoolWindow win = PoolWindowAt(g, p, q);
        float out;
        if (c.kind == MNT_POOL_MAX) {
          out = x[PoolArgMax(load, g.w, win)];
        } else {
          double sum = 0.0;
          for (int64_t i = win.h0; i < win.h1; ++i) {
            for (int64_t j = win.w0; j < win.w1; ++j) sum += x[i * g.w + j];
          }
          out = static_cast<float>(sum / static_cast<double>(win.divisor));
        }
        yv[(plane * g.p + p) * g.q + q] = out;
      }
    }
  }
  WriteF32(yv.data(), *c.y);
  return Status::Ok();
}

Status CpuBackend::Pool2dBackward(const backend::Pool2dBackwardCall& c) {
  const PoolGeometry& g = c.geometry;
  const std::vector<float> xv = ReadF32(*c.x), dyv = ReadF32(*c.dy);
  std::vector<float> dxv(xv.size(), 0.0f);
  for (int64_t plane = 0; plane < c.planes; ++plane) {
    const float* x = xv.data() + plane * g.h * g.w;
    const auto load = [x](int64_t i) { return x[i]; };
    float* dx = dxv.data() + plane * g.h * g.w;
    for (int64_t p = 0; p < g.p; ++p) {
      for (int64_t q = 0; q < g.q; ++q) {
        const PoolWindow win = PoolWindowAt(g, p, q);
        const float dy = dyv[(plane * g.p + p) * g.q + q];
        if (c.kind == MNT_POOL_MAX) {
          dx[PoolArgMax(load, g.w, win)] += dy;
        } else {
          const float share = dy / static_cast<float>(win.divisor);
          for (int64_t i = win.h0; i < win.h1; ++i) {
            for (int64_t j = win.w0; j < win.w1; ++j) dx[i * g.w + j] += share;
          }
        }
      }
    }
  }
  WriteF32(dxv.data(), *c.dx);
  return Status::Ok();
}

}  // namespace mnt::cpu

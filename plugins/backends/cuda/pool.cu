// POOL2D_FORWARD/BACKWARD: one thread per output (forward) or per input
// element (backward, gathering from the windows that cover it in the CPU
// reference's order: deterministic, no atomics). Window geometry and argmax
// are layer_math.h's, the same functions the CPU backend runs.
#include <cuda_runtime.h>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

struct PlaneLoader {
  DevTensor t;
  int64_t base;
  __device__ float operator()(int64_t i) const { return Load(t, base + i); }
};

__global__ void PoolForwardKernel(PoolGeometry g, MNT_PoolKind kind, int64_t planes,
                                  DevTensor x, DevTensor y) {
  const int64_t total = planes * g.p * g.q;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = idx % g.q, p = (idx / g.q) % g.p, plane = idx / (g.p * g.q);
    const PlaneLoader load{x, plane * g.h * g.w};
    const PoolWindow win = PoolWindowAt(g, p, q);
    float out;
    if (kind == MNT_POOL_MAX) {
      out = load(PoolArgMax(load, g.w, win));
    } else {
      double sum = 0.0;
      for (int64_t i = win.h0; i < win.h1; ++i) {
        for (int64_t j = win.w0; j < win.w1; ++j) sum += load(i * g.w + j);
      }
      out = static_cast<float>(sum / static_cast<double>(win.divisor));
    }
    Store(y, idx, out);
  }
}

// One thread per input element gathers from the windows covering it, in the
// CPU reference's (p, q) order.
__global__ void PoolBackwardKernel(PoolGeometry g, MNT_PoolKind kind, int64_t planes,
                                   DevTensor dy, DevTensor x, DevTensor dx) {
  const int64_t total = planes * g.h * g.w;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t iw = idx % g.w, ih = (idx / g.w) % g.h, plane = idx / (g.h * g.w);
    const PlaneLoader load{x, plane * g.h * g.w};
    int64_t p0, p1, q0, q1;
    PoolCoveringRange(ih, g.window_h, g.stride_h, g.pad_h, g.p, &p0, &p1);
    PoolCoveringRange(iw, g.window_w, g.stride_w, g.pad_w, g.q, &q0, &q1);
    float acc = 0.0f;
    for (int64_t p = p0; p <= p1; ++p) {
      for (int64_t q = q0; q <= q1; ++q) {
        const PoolWindow win = PoolWindowAt(g, p, q);
        const float grad = Load(dy, (plane * g.p + p) * g.q + q);
        if (kind == MNT_POOL_MAX) {
          if (PoolArgMax(load, g.w, win) == ih * g.w + iw) acc += grad;
        } else {
          acc += grad / static_cast<float>(win.divisor);
        }
      }
    }
    Store(dx, idx, acc);
  }
}

}  // namespace

Status CudaBackend::Pool2dForward(const backend::Pool2dForwardCall& c) {
  const PoolGeometry& g = c.geometry;
  const int64_t total = c.planes * g.p * g.q;
  if (total == 0) return Status::Ok();
  return Launched(c,
                  Launch(PoolForwardKernel, GridFor(total, kThreads), kThreads, 0, stream, g,
                         c.kind, c.planes, Dev(c.x), Dev(c.y)),
                  "pool_forward");
}

Status CudaBackend::Pool2dBackward(const backend::Pool2dBackwardCall& c) {
  const PoolGeometry& g = c.geometry;
  const int64_t total = c.planes * g.h * g.w;
  if (total == 0) return Status::Ok();
  return Launched(c,
                  Launch(PoolBackwardKernel, GridFor(total, kThreads), kThreads, 0, stream, g,
                         c.kind, c.planes, Dev(c.dy), Dev(c.x), Dev(c.dx)),
                  "pool_backward");
}

}  // namespace mnt::cuda

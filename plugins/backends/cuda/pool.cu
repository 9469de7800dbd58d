// POOL2D_FORWARD/BACKWARD: one thread per output (forward) or per input
// element (backward, gathering from the windows that cover it in the CPU
// reference's order: deterministic, no atomics). Window geometry and argmax
// are layer_math.h's, the same functions the CPU backend runs. Compiled per
// storage type and chosen once per launch (the switch only for mixed dtypes).
#include <cuda_runtime.h>

#include "plugins/backends/common/layer_math.h"
#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/device_math.cuh"

namespace mnt::cuda {

using sdk::Status;

namespace {

template <typename S>
struct PlaneLoader {
  DevTensor t;
  int64_t base;
  __device__ float operator()(int64_t i) const { return Load<S>(t, base + i); }
};

template <typename S>
__global__ void PoolForwardKernel(PoolGeometry g, MNT_PoolKind kind, int64_t planes,
                                  DevTensor x, DevTensor y) {
  const int64_t total = planes * g.p * g.q;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = idx % g.q, p = (idx / g.q) % g.p, plane = idx / (g.p * g.q);
    const PlaneLoader<S> load{x, plane * g.h * g.w};
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
    Store<S>(y, idx, out);
  }
}

// One thread per input element gathers from the windows covering it, in the
// CPU reference's (p, q) order.
template <typename S>
__global__ void PoolBackwardKernel(PoolGeometry g, MNT_PoolKind kind, int64_t planes,
                                   DevTensor dy, DevTensor x, DevTensor dx) {
  const int64_t total = planes * g.h * g.w;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t iw = idx % g.w, ih = (idx / g.w) % g.h, plane = idx / (g.h * g.w);
    const PlaneLoader<S> load{x, plane * g.h * g.w};
    int64_t p0, p1, q0, q1;
    PoolCoveringRange(ih, g.window_h, g.stride_h, g.pad_h, g.p, &p0, &p1);
    PoolCoveringRange(iw, g.window_w, g.stride_w, g.pad_w, g.q, &q0, &q1);
    float acc = 0.0f;
    for (int64_t p = p0; p <= p1; ++p) {
      for (int64_t q = q0; q <= q1; ++q) {
        const PoolWindow win = PoolWindowAt(g, p, q);
        const float grad = Load<S>(dy, (plane * g.p + p) * g.q + q);
        if (kind == MNT_POOL_MAX) {
          if (PoolArgMax(load, g.w, win) == ih * g.w + iw) acc += grad;
        } else {
          acc += grad / static_cast<float>(win.divisor);
        }
      }
    }
    Store<S>(dx, idx, acc);
  }
}

}  // namespace

Status CudaBackend::Pool2dForward(const backend::Pool2dForwardCall& c) {
  const PoolGeometry& g = c.geometry;
  const int64_t total = c.planes * g.p * g.q;
  if (total == 0) return Status::Ok();
  const cudaError_t err = WithStorage(CommonDType({c.x->dtype, c.y->dtype}), [&](auto st) {
    return Launch(PoolForwardKernel<decltype(st)>, GridFor(total, kThreads), kThreads, 0,
                  stream, g, c.kind, c.planes, Dev(c.x), Dev(c.y));
  });
  return Launched(c, err, "pool_forward");
}

Status CudaBackend::Pool2dBackward(const backend::Pool2dBackwardCall& c) {
  const PoolGeometry& g = c.geometry;
  const int64_t total = c.planes * g.h * g.w;
  if (total == 0) return Status::Ok();
  const cudaError_t err =
      WithStorage(CommonDType({c.dy->dtype, c.x->dtype, c.dx->dtype}), [&](auto st) {
        return Launch(PoolBackwardKernel<decltype(st)>, GridFor(total, kThreads), kThreads, 0,
                      stream, g, c.kind, c.planes, Dev(c.dy), Dev(c.x), Dev(c.dx));
      });
  return Launched(c, err, "pool_backward");
}

}  // namespace mnt::cuda

// FILL, CAST, ADD and the activations, on the tensors' own memory: fp32
// operands in place, 16-bit ones converted a block at a time on the stack
// (parallel.h's ForBlocks; one region per op). Elementwise, so every
// permitted output/input alias is safe: a block is read before it is stored.
#include <algorithm>
#include <cstdint>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/backends/cpu/vector_loops.h"

namespace mnt::cpu {

using sdk::Status;

Status CpuBackend::Fill(const backend::FillCall& c) {
  if (c.out->dtype == MNT_DTYPE_I32) {
    std::fill(c.out.i32(), c.out.i32() + c.n, static_cast<int32_t>(c.value));
    return Status::Ok();
  }
  const float value = static_cast<float>(c.value);
  if (c.out->dtype == MNT_DTYPE_F32) {
    ForBlocks(c.n, [&](int64_t off, int64_t len) {
      std::fill(c.out.f32() + off, c.out.f32() + off + len, value);
    });
    return Status::Ok();
  }
  // 16-bit: the value rounded once, then its bits repeated.
  const uint16_t bits =
      c.out->dtype == MNT_DTYPE_F16 ? FloatToHalfBits(value) : FloatToBf16Bits(value);
  uint16_t* dst = static_cast<uint16_t*>(c.out->data);
  ForBlocks(c.n, [&](int64_t off, int64_t len) { std::fill(dst + off, dst + off + len, bits); });
  return Status::Ok();
}

Status CpuBackend::Cast(const backend::CastCall& c) {
  const MNT_Tensor& x = *c.x;
  const MNT_Tensor& y = *c.y;
  ForBlocks(c.n, [&](int64_t off, int64_t len) {
    float buf[kBlock];
    if (y.dtype == MNT_DTYPE_F32) {
      ReadF32Range(x, off, len, static_cast<float*>(y.data) + off);
    } else {
      WriteF32Range(InBlock(x, off, len, buf), y, off, len);
    }
  });
  return Status::Ok();
}

Status CpuBackend::Add(const backend::AddCall& c) {
  const float alpha = c.alpha, beta = c.beta;
  const bool has_b = c.b.present();
  ForBlocks(c.n, [&](int64_t off, int64_t len) {
    float abuf[kBlock], bbuf[kBlock], obuf[kBlock];
    const float* a = InBlock(*c.a, off, len, abuf);
    float* out = OutBlock(*c.out, off, obuf);
    if (has_b) {
      const float* b = InBlock(*c.b, off, len, bbuf);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) out[i] = alpha * a[i] + beta * b[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) out[i] = alpha * a[i];
    }
    StoreBlock(out, *c.out, off, len);
  });
  return Status::Ok();
}

Status CpuBackend::ActivationForward(const backend::ActivationForwardCall& c) {
  const MNT_Activation act = c.activation;
  ForBlocks(c.n, [&](int64_t off, int64_t len) {
    float xbuf[kBlock], ybuf[kBlock];
    const float* x = InBlock(*c.x, off, len, xbuf);
    float* y = OutBlock(*c.y, off, ybuf);
    if (act == MNT_ACTIVATION_RELU) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) y[i] = Relu(x[i]);
    } else if (act == MNT_ACTIVATION_GELU_TANH) {
      GeluTanhLoop(x, y, len);
    } else if (x != y) {
      std::copy(x, x + len, y);
    }
    StoreBlock(y, *c.y, off, len);
  });
  return Status::Ok();
}

Status CpuBackend::ActivationBackward(const backend::ActivationBackwardCall& c) {
  const MNT_Activation act = c.activation;
  ForBlocks(c.n, [&](int64_t off, int64_t len) {
    float xbuf[kBlock], gbuf[kBlock], dbuf[kBlock];
    const float* x = InBlock(*c.x, off, len, xbuf);
    const float* dy = InBlock(*c.dy, off, len, gbuf);
    float* dx = OutBlock(*c.dx, off, dbuf);
    if (act == MNT_ACTIVATION_RELU) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) dx[i] = ReluBackward(x[i], dy[i]);
    } else if (act == MNT_ACTIVATION_GELU_TANH) {
      GeluTanhBackwardLoop(x, dy, dx, len);
    } else if (dx != dy) {
      std::copy(dy, dy + len, dx);
    }
    StoreBlock(dx, *c.dx, off, len);
  });
  return Status::Ok();
}

}  // namespace mnt::cpu

// FILL, CAST, ADD and the activations.
#include <cstdint>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/gelu_vector.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {
// Below this many elements waking the threads costs more than it saves.
constexpr int64_t kParallelElements = int64_t{1} << 14;
}  // namespace

Status CpuBackend::Fill(const backend::FillCall& c) {
  if (c.out->dtype == MNT_DTYPE_I32) {
    int32_t* dst = c.out.i32();
    for (int64_t i = 0; i < c.n; ++i) dst[i] = static_cast<int32_t>(c.value);
    return Status::Ok();
  }
  std::vector<float> values(c.n, static_cast<float>(c.value));
  WriteF32(values.data(), *c.out);
  return Status::Ok();
}

Status CpuBackend::Cast(const backend::CastCall& c) {
  std::vector<float> v = ReadF32(*c.x);
  WriteF32(v.data(), *c.y);
  return Status::Ok();
}

Status CpuBackend::Add(const backend::AddCall& c) {
  std::vector<float> result = ReadF32(*c.a);
  if (c.b.present()) {
    const std::vector<float> b = ReadF32(*c.b);
    const float* bv = b.data();
    float* r = result.data();
#pragma omp parallel for simd schedule(static) if (c.n > kParallelElements)
    for (int64_t i = 0; i < c.n; ++i) r[i] = c.alpha * r[i] + c.beta * bv[i];
  } else {
    float* r = result.data();
#pragma omp parallel for simd schedule(static) if (c.n > kParallelElements)
    for (int64_t i = 0; i < c.n; ++i) r[i] = c.alpha * r[i];
  }
  WriteF32(result.data(), *c.out);
  return Status::Ok();
}

namespace {

// out[i] = f(in[i]) (and g[i]) on n elements, threads above the threshold.
template <typename F>
void Map(int64_t n, const float* in, float* out, F f) {
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}
template <typename F>
void Map2(int64_t n, const float* a, const float* b, float* out, F f) {
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

}  // namespace

// fp32 tensors are read and written in place (elementwise, so y may alias
// x); other dtypes go through fp32 copies.
Status CpuBackend::ActivationForward(const backend::ActivationForwardCall& c) {
  const bool direct = c.x->dtype == MNT_DTYPE_F32 && c.y->dtype == MNT_DTYPE_F32;
  std::vector<float> v;
  if (!direct) v = ReadF32(*c.x);
  const float* x = direct ? c.x.f32() : v.data();
  float* y = direct ? c.y.f32() : v.data();
  const int64_t n = c.n;
  if (c.activation == MNT_ACTIVATION_RELU) {
    Map(n, x, y, [](float e) { return Relu(e); });
  } else if (c.activation == MNT_ACTIVATION_GELU_TANH) {
    Map(n, x, y, [](float e) { return GeluTanhVector(e); });
  } else if (direct && x != y) {
    Map(n, x, y, [](float e) { return e; });
  }
  if (!direct) WriteF32(v.data(), *c.y);
  return Status::Ok();
}

Status CpuBackend::ActivationBackward(const backend::ActivationBackwardCall& c) {
  const bool direct = c.x->dtype == MNT_DTYPE_F32 && c.dy->dtype == MNT_DTYPE_F32 &&
                      c.dx->dtype == MNT_DTYPE_F32;
  std::vector<float> x, g;
  if (!direct) {
    x = ReadF32(*c.x);
    g = ReadF32(*c.dy);
  }
  const float* xv = direct ? c.x.f32() : x.data();
  const float* dy = direct ? c.dy.f32() : g.data();
  float* dx = direct ? c.dx.f32() : g.data();
  if (c.activation == MNT_ACTIVATION_RELU) {
    Map2(c.n, xv, dy, dx, [](float a, float b) { return ReluBackward(a, b); });
  } else if (c.activation == MNT_ACTIVATION_GELU_TANH) {
    Map2(c.n, xv, dy, dx, [](float a, float b) { return GeluTanhBackwardVector(a, b); });
  } else if (direct && dx != dy) {
    Map(c.n, dy, dx, [](float e) { return e; });
  }
  if (!direct) WriteF32(g.data(), *c.dx);
  return Status::Ok();
}

}  // namespace mnt::cpu

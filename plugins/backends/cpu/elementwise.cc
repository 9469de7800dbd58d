// FILL, CAST, ADD and the activations.
#include <cstdint>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
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

Status CpuBackend::ActivationForward(const backend::ActivationForwardCall& c) {
  std::vector<float> v = ReadF32(*c.x);
  float* x = v.data();
  const int64_t n = static_cast<int64_t>(v.size());
  if (c.activation == MNT_ACTIVATION_RELU) {
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) x[i] = Relu(x[i]);
  } else if (c.activation == MNT_ACTIVATION_GELU_TANH) {
#pragma omp parallel for schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) x[i] = GeluTanh(x[i]);
  }
  WriteF32(v.data(), *c.y);
  return Status::Ok();
}

Status CpuBackend::ActivationBackward(const backend::ActivationBackwardCall& c) {
  const std::vector<float> x = ReadF32(*c.x);
  std::vector<float> g = ReadF32(*c.dy);
  const float* xv = x.data();
  float* gv = g.data();
  if (c.activation == MNT_ACTIVATION_RELU) {
#pragma omp parallel for simd schedule(static) if (c.n > kParallelElements)
    for (int64_t i = 0; i < c.n; ++i) gv[i] = ReluBackward(xv[i], gv[i]);
  } else if (c.activation == MNT_ACTIVATION_GELU_TANH) {
#pragma omp parallel for schedule(static) if (c.n > kParallelElements)
    for (int64_t i = 0; i < c.n; ++i) gv[i] = GeluTanhBackward(xv[i], gv[i]);
  }
  WriteF32(g.data(), *c.dx);
  return Status::Ok();
}

}  // namespace mnt::cpu

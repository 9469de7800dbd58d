// FILL, CAST, ADD and the activations.
#include <cstdint>
#include <vector>

#include "plugins/backends/common/elementwise_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

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
    for (int64_t i = 0; i < c.n; ++i) result[i] = c.alpha * result[i] + c.beta * b[i];
  } else {
    for (int64_t i = 0; i < c.n; ++i) result[i] = c.alpha * result[i];
  }
  WriteF32(result.data(), *c.out);
  return Status::Ok();
}

Status CpuBackend::ActivationForward(const backend::ActivationForwardCall& c) {
  std::vector<float> v = ReadF32(*c.x);
  if (c.activation == MNT_ACTIVATION_RELU) {
    for (float& e : v) e = Relu(e);
  } else if (c.activation == MNT_ACTIVATION_GELU_TANH) {
    for (float& e : v) e = GeluTanh(e);
  }
  WriteF32(v.data(), *c.y);
  return Status::Ok();
}

Status CpuBackend::ActivationBackward(const backend::ActivationBackwardCall& c) {
  const std::vector<float> x = ReadF32(*c.x);
  std::vector<float> g = ReadF32(*c.dy);
  if (c.activation == MNT_ACTIVATION_RELU) {
    for (int64_t i = 0; i < c.n; ++i) g[i] = ReluBackward(x[i], g[i]);
  } else if (c.activation == MNT_ACTIVATION_GELU_TANH) {
    for (int64_t i = 0; i < c.n; ++i) g[i] = GeluTanhBackward(x[i], g[i]);
  }
  WriteF32(g.data(), *c.dx);
  return Status::Ok();
}

}  // namespace mnt::cpu

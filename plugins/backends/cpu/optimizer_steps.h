// What the CPU backend's optimizer kernels share (optimizers.cc, ABI 1.12's
// adamw8bit.cc and adafactor.cc): the skip on found_inf, the learning rate
// and step counter read from device memory (host memory here), and the
// working copy written from a block of new master weights, rounded to
// nearest or stochastically (ABI 1.7).
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_OPTIMIZER_STEPS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_OPTIMIZER_STEPS_H_

#include <cstdint>

#include "plugins/backends/common/calls.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

// found_inf is non-zero: the whole step is skipped.
inline bool SkipStep(const backend::StepInputs& s) {
  return s.found_inf.present() && *s.found_inf.f32() != 0.0f;
}

// The learning rate: the 1.7 device scalar when given, else the params'.
inline float StepLr(const backend::Operand& device_lr, float params_lr) {
  return device_lr.present() ? *device_lr.f32() : params_lr;
}

// The applied-step counter's next 1-based step, or an error naming it.
inline sdk::Status NextStep(const backend::TypedCall& call, const backend::Operand& counter,
                            int64_t* step) {
  const int32_t applied = *counter.i32();
  if (applied < 0 || applied == INT32_MAX) {
    return call.Invalid(sdk::Format("%s holds %d, expected 0..%d applied steps",
                                    counter.label.c_str(), applied, INT32_MAX - 1));
  }
  *step = int64_t{applied} + 1;
  return sdk::Status::Ok();
}

// How one tensor's working copy is written: rounded to nearest even, or
// (ABI 1.7) stochastically with this key, element i taking the bits of
// element index element + i (1.11: a piece's offset in its parameter).
struct CopyRounding {
  bool stochastic = false;
  uint64_t key = 0;
  int64_t element = 0;
};

// Tensor `index` of a step's table (0 for a single-tensor op) at `step`.
inline CopyRounding RoundingFor(const backend::WorkingRounding& r, size_t index, int64_t step) {
  if (!r.stochastic) return CopyRounding{};
  return CopyRounding{true, StochasticRoundingKey(r.seed, step, r.TensorOf(index)),
                      r.ElementOf(index)};
}

// Elements [off, off + len) of the working copy from the new master
// weights `w` (the whole tensor's): rounded to nearest, or stochastically
// as bf16 bits (the contract check saw to a BF16 copy; element i's bits
// depend on i only, not on the thread or block).
inline void WriteWorkingBlock(const float* w, const backend::Operand& working,
                              const CopyRounding& rounding, int64_t off, int64_t len) {
  if (!working.present()) return;
  if (!rounding.stochastic) {
    WriteF32Range(w + off, *working, off, len);
    return;
  }
  uint16_t* out = static_cast<uint16_t*>(working->data) + off;
  for (int64_t i = 0; i < len; ++i) {
    out[i] = FloatToBf16BitsStochastic(w[off + i], rounding.key, rounding.element + off + i);
  }
}

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_OPTIMIZER_STEPS_H_

// Subnormal fp32 values in the CPU backend's arithmetic. An x86 core takes
// a microcode assist (~100+ cycles) for an SSE/AVX operation with a
// subnormal input or result, and a transformer makes them as it trains:
// once attention sharpens, its probabilities and the products they feed
// underflow. The 8-layer GPT of docs/performance.md slowed from 0.6 to 2.2 s
// per step between steps 300 and 900 on the AMX Xeon, 85% of the time in
// oneDNN's JIT kernels, with MXCSR's denormal flag set. With flushing
// (MXCSR's FTZ and DAZ bits, what TensorFlow's CPU executor sets) a
// subnormal result becomes 0 and a subnormal input reads as 0: at most
// 2^-126 ~ 1.2e-38 absolute, far below bf16's and fp32's relative
// resolution of anything a step adds up.
//
// Only the forward and backward passes' arithmetic flushes (GEMMs,
// attention, activations, norms, losses, convolutions: where a sharpening
// model makes subnormals and spends its time). The bookkeeping ops keep
// IEEE: loss scaling, FP8 scale updates, clipping, norms, statistics,
// casts, and the optimizer steps, whose results must equal PyTorch's
// GradScaler, Transformer Engine and the float64 references bit for bit
// or to their stated tolerance even at subnormal values (a backed-off loss
// scale, an FP8 scale with a large margin, a vanishing second moment).
//
// The bits are per thread. Around each op the backend sets its mode on the
// calling thread and restores the caller's after it (the trainer's own host
// arithmetic keeps its mode), and sets it on the OpenMP workers (libgomp's
// pool, which oneDNN shares) whenever they last ran another mode, so two
// instances with different modes in one process each get their own. A
// worker libgomp starts during an op copies the mode of the thread that
// starts it: the op's caller.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_DENORMALS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_DENORMALS_H_

#include <cstdint>

namespace mnt::cpu {

// MXCSR's FTZ (bit 15) and DAZ (bit 6).
constexpr unsigned kFlushDenormalsBits = 0x8040u;

// Whether op `raw_op` runs with subnormals flushed under denormals=flush.
bool FlushesDenormals(int32_t raw_op);

// The mode of the calling thread (flush: both bits set, keep: both clear)
// while it lives, and of the OpenMP workers of a team of up to `workers`
// threads; then the calling thread's mode as it found it.
class ScopedDenormalsMode {
 public:
  ScopedDenormalsMode(bool flush, int workers);
  ~ScopedDenormalsMode();
  ScopedDenormalsMode(const ScopedDenormalsMode&) = delete;
  ScopedDenormalsMode& operator=(const ScopedDenormalsMode&) = delete;

 private:
  unsigned saved_ = 0;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_DENORMALS_H_

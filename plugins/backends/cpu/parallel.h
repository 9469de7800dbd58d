// How many of libgomp's threads a kernel wakes, and the blocked loop most
// kernels run on. Every parallel region costs a fork and a join (a few
// microseconds with the workers spinning, tens when they sleep or share the
// core with other processes, which is what dominated 2-thread profiles of
// gpt2-tiny at ~200 regions a step), so a kernel asks for a second thread only
// when each thread gets enough work to pay for it, and each kernel opens one
// region, not one per phase.
//
// Thread counts never change results: the kernels split work so that each
// output element (or fixed-order partial sum) is computed by one thread in
// the same order whatever the count (the team changes from step to step,
// thread_governor.h).
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_PARALLEL_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_PARALLEL_H_

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace mnt::cpu {

// Elements of a streaming loop (a few flops per element) worth one thread:
// about 10-30 us on one core, well above a fork/join.
constexpr int64_t kElementsPerThread = int64_t{1} << 15;

// Threads for `work` elements' worth (at least `per_thread` each, never more
// than the pool); 1 means run on the calling thread without a region.
inline int ThreadsFor(int64_t work, int64_t per_thread = kElementsPerThread) {
  if (work < 2 * per_thread || omp_in_parallel()) return 1;
  const int64_t pool = omp_get_max_threads();
  return static_cast<int>(std::min<int64_t>(pool, work / per_thread));
}

// Sets the calling thread's team size (omp_set_num_threads) for a scope.
// Work whose bits depend on its thread count runs under one: oneDNN's
// convolutions on the whole pool whatever the step's team, and sgemm calls
// meant to be one thread's on one thread even outside an active region.
class ScopedTeam {
 public:
  explicit ScopedTeam(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~ScopedTeam() { omp_set_num_threads(saved_); }
  ScopedTeam(const ScopedTeam&) = delete;
  ScopedTeam& operator=(const ScopedTeam&) = delete;

 private:
  const int saved_;
};

// Elements one block covers: small enough for a 16-bit operand's fp32
// conversion to live on the stack, large enough to vectorise.
constexpr int64_t kBlock = 1024;

// f(offset, count) over [0, n) in blocks of kBlock, in one region when the
// size is worth it (static schedule: a block's elements are one thread's).
template <typename F>
void ForBlocks(int64_t n, F f) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const int threads = ThreadsFor(n);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t offset = b * kBlock;
    f(offset, std::min(kBlock, n - offset));
  }
}

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_PARALLEL_H_

#include "plugins/backends/cpu/denormals.h"

#include <omp.h>
#include <xmmintrin.h>

#include <atomic>

#include "plugins/abi/mnt_backend.h"

namespace mnt::cpu {
namespace {

unsigned WithMode(unsigned csr, bool flush) {
  return flush ? csr | kFlushDenormalsBits : csr & ~kFlushDenormalsBits;
}

// The mode the workers last got (-1: never set), and for how many threads.
std::atomic<int> g_workers_mode{-1};
std::atomic<int> g_workers_count{0};

}  // namespace

bool FlushesDenormals(int32_t raw_op) {
  switch (raw_op) {
    case MNT_OP_GEMM:
    case MNT_OP_BIAS_GRAD:
    case MNT_OP_ACTIVATION_FORWARD:
    case MNT_OP_ACTIVATION_BACKWARD:
    case MNT_OP_ADD:
    case MNT_OP_SOFTMAX:
    case MNT_OP_CROSS_ENTROPY:
    case MNT_OP_LAYERNORM_FORWARD:
    case MNT_OP_LAYERNORM_BACKWARD:
    case MNT_OP_EMBEDDING_FORWARD:
    case MNT_OP_EMBEDDING_BACKWARD:
    case MNT_OP_ATTENTION_FORWARD:
    case MNT_OP_ATTENTION_BACKWARD:
    case MNT_OP_CONV2D_FORWARD:
    case MNT_OP_CONV2D_BACKWARD_DATA:
    case MNT_OP_CONV2D_BACKWARD_FILTER:
    case MNT_OP_POOL2D_FORWARD:
    case MNT_OP_POOL2D_BACKWARD:
    case MNT_OP_BATCHNORM_FORWARD:
    case MNT_OP_BATCHNORM_BACKWARD:
    case MNT_OP_GEMM_BIAS_GELU:
    case MNT_OP_GEMM_DGELU:
    case MNT_OP_GEMM_BIAS_GRAD:
    case MNT_OP_FUSED_CLASSIFIER:
    case MNT_OP_RESIDUAL_LAYERNORM_FORWARD:
    case MNT_OP_RESIDUAL_LAYERNORM_BACKWARD:
    case MNT_OP_SCALED_GEMM:
      return true;
    default:
      return false;
  }
}

ScopedDenormalsMode::ScopedDenormalsMode(bool flush, int workers) : saved_(_mm_getcsr()) {
  _mm_setcsr(WithMode(saved_, flush));
  if (g_workers_mode.load(std::memory_order_relaxed) == (flush ? 1 : 0) &&
      g_workers_count.load(std::memory_order_relaxed) >= workers) {
    return;
  }
  // Every thread of the team, this one included (it is set already).
#pragma omp parallel num_threads(workers) if (workers > 1)
  { _mm_setcsr(WithMode(_mm_getcsr(), flush)); }
  g_workers_mode.store(flush ? 1 : 0, std::memory_order_relaxed);
  g_workers_count.store(workers, std::memory_order_relaxed);
}

ScopedDenormalsMode::~ScopedDenormalsMode() { _mm_setcsr(saved_); }

}  // namespace mnt::cpu

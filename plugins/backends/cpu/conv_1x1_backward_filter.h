// The weight gradient of a 1x1 convolution (stride 1, no padding, no
// dilation, one group) as one matrix product over every image's pixels:
//   dw[K, C] (+)= dy[K, N*PQ] · x[C, N*PQ]^T
// on the GEMM engine's bf16 kernels (AMX or AVX512_BF16, fp32 accumulation).
// NCHW keeps each image's [K, PQ] and [C, PQ] planes apart, so both are
// gathered into one [rows, N*PQ] buffer first; the product then has the whole
// batch's pixels as its inner dimension, where oneDNN 2.6's backward-weights
// convolution ran ResNet-50's 1x1 layers at a third of its 3x3 rate
// (docs/performance.md, "bf16 on AMX"). The GEMM cuts its output into tiles
// that one thread each computes, so the bits do not depend on the team.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_CONV_1X1_BACKWARD_FILTER_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_CONV_1X1_BACKWARD_FILTER_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "plugins/backends/common/calls/conv.h"
#include "plugins/backends/cpu/onednn_gemm.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

class Conv1x1BackwardFilter {
 public:
  // Whether `c` is such a convolution with bf16 x and dy, bf16 compute, an
  // fp32 or bf16 weight gradient, and `gemm` runs bf16 natively.
  static bool Fits(const OneDnnGemm& gemm, const backend::Conv2dBackwardFilterCall& c);

  // dw only (the caller sums dbias). Accumulating adds the fp32 product to
  // the stored gradient in fp32 and rounds once, as the convolution
  // primitives' path does (StoreResult).
  sdk::Status Run(OneDnnGemm& gemm, const backend::Conv2dBackwardFilterCall& c);

 private:
  // Kept between calls, as the GEMM epilogues' product is: fresh buffers of
  // a few MiB are page-faulted in by every call.
  std::mutex mu_;
  std::vector<uint16_t> dy_, x_;       // the gathered planes
  std::vector<float> result_, sum_;    // ResultTarget's and StoreResult's
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_CONV_1X1_BACKWARD_FILTER_H_

// Deterministic column sums (reduce.cu), which BIAS_GRAD and layer norm's
// parameter gradients share: dy viewed as [rows, c] is summed per column in
// two passes (fixed row chunks, double accumulation), so results never
// depend on scheduling.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_REDUCE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_REDUCE_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/backends/cuda/launch.h"

namespace mnt::cuda {

// `partials` scratch holds ColumnSumChunks(rows) * c * 2 doubles.
int64_t ColumnSumChunks(int64_t rows);
// db (+)= sum over rows of dy; with x (data non-NULL), also dw (+)= sum over
// rows of dy * (x - mean[row]) * rstd[row] (layer norm's weight gradient).
cudaError_t LaunchColumnSums(cudaStream_t s, DevTensor dy, DevTensor x,
                             const float* mean, const float* rstd, DevTensor dw,
                             DevTensor db, int64_t rows, int64_t c, bool accumulate,
                             double* partials);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_REDUCE_H_

// Bias gradients: column sums of a row-major [rows, cols] float tensor, each
// column accumulated in double over the rows in row order by one thread
// (stripes of columns split across threads), so the bits never depend on the
// thread count. BIAS_GRAD and the fused GEMM epilogues share it, so the fused
// and unfused bias gradients of the same fp32 values agree bit for bit.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_COLUMN_SUMS_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_COLUMN_SUMS_H_

#include <cstdint>

#include "plugins/abi/mnt_common.h"

namespace mnt::cpu {

// acc[j] = sum over r of t[r, j] (t read in place; any float dtype).
void SumColumns(const MNT_Tensor& t, int64_t rows, int64_t cols, double* acc);
// db[j] = (accumulate ? db[j] : 0) + (float)acc[j], for j < n.
void AddSums(const double* acc, int64_t n, const MNT_Tensor& db, bool accumulate);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_COLUMN_SUMS_H_

// What --debug_overflow prints for a tensor: its finite elements' smallest
// and largest magnitude and how many elements are inf or NaN (fp32, fp16,
// bf16; other dtypes are not measured). Measured on the device by the
// backend's MNT_OP_TENSOR_STATS (ABI 1.10) where it has the op
// (StatsFromDevice turns its 16 bytes into these), else here from a host
// copy of the tensor's bytes (MeasureTensor): the same numbers either way.
#ifndef MANTISSA_TRAINER_DEBUG_TENSOR_STATS_H_
#define MANTISSA_TRAINER_DEBUG_TENSOR_STATS_H_

#include <cstdint>
#include <string>

#include "plugins/abi/mantissa.h"

namespace mnt::trainer {

struct TensorStats {
  bool measured = false;   // a float dtype whose bytes were read
  int64_t elements = 0;
  int64_t nonfinite = 0;   // inf or NaN
  int64_t nans = 0;
  double abs_min = 0;      // over the finite elements (0 when none)
  double abs_max = 0;
};

// `bytes` holds `elements` values of `dtype`, as the device stores them.
TensorStats MeasureTensor(MNT_DType dtype, const void* bytes, int64_t elements);

// MNT_OP_TENSOR_STATS's outputs for a tensor of `elements` values: range =
// {smallest, largest finite |x|}, counts = {inf or NaN, NaN}.
TensorStats StatsFromDevice(int64_t elements, const float range[2], const int32_t counts[2]);

// "abs min 1.2e-05 max 3.4e+02" / "... 3 inf/NaN of 4096" / "not measured".
std::string FormatStats(const TensorStats& s);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_DEBUG_TENSOR_STATS_H_

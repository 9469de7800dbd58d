#include "trainer/debug/tensor_stats.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::trainer {
namespace {

float ElementAt(MNT_DType dtype, const unsigned char* bytes, int64_t i) {
  if (dtype == MNT_DTYPE_F32) {
    float f;
    std::memcpy(&f, bytes + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes + i * 2, 2);
  return dtype == MNT_DTYPE_F16 ? HalfBitsToFloat(h) : Bf16BitsToFloat(h);
}

}  // namespace

TensorStats MeasureTensor(MNT_DType dtype, const void* bytes, int64_t elements) {
  TensorStats s;
  if (dtype != MNT_DTYPE_F32 && dtype != MNT_DTYPE_F16 && dtype != MNT_DTYPE_BF16) return s;
  s.measured = true;
  s.elements = elements;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  const auto* b = static_cast<const unsigned char*>(bytes);
  for (int64_t i = 0; i < elements; ++i) {
    const float v = ElementAt(dtype, b, i);
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      if (std::isnan(v)) ++s.nans;
      continue;
    }
    const double a = std::fabs(static_cast<double>(v));
    lo = std::min(lo, a);
    hi = std::max(hi, a);
  }
  s.abs_min = std::isfinite(lo) ? lo : 0;
  s.abs_max = hi;
  return s;
}

TensorStats StatsFromDevice(int64_t elements, const float range[2], const int32_t counts[2]) {
  TensorStats s;
  s.measured = true;
  s.elements = elements;
  s.nonfinite = counts[0];
  s.nans = counts[1];
  s.abs_min = range[0];
  s.abs_max = range[1];
  return s;
}

std::string FormatStats(const TensorStats& s) {
  if (!s.measured) return "not measured";
  std::string out = absl::StrFormat("abs min %.3g max %.3g", s.abs_min, s.abs_max);
  if (s.nonfinite > 0) {
    absl::StrAppendFormat(&out, ", %d inf/NaN (%d NaN) of %d", s.nonfinite, s.nans, s.elements);
  }
  return out;
}

}  // namespace mnt::trainer

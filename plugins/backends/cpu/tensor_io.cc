#include "plugins/backends/cpu/tensor_io.h"

#include <omp.h>

#include <cstring>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/convert_arrays.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

namespace {

// convert(begin, end) over [0, n): one contiguous slice per thread for
// arrays worth the threads (parallel.h). The conversions are elementwise, so
// slicing changes no bits.
template <typename Convert>
void InSlices(int64_t n, Convert convert) {
  const int threads = ThreadsFor(n);
  if (threads <= 1) {
    if (n > 0) convert(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = n * t / team, end = n * (t + 1) / team;
    if (end > begin) convert(begin, end);
  }
}

}  // namespace

std::vector<float> ReadF32(const MNT_Tensor& t) {
  std::vector<float> v(static_cast<size_t>(sdk::NumElements(t)));
  ReadF32(t, v.data());
  return v;
}

void ReadF32(const MNT_Tensor& t, float* dst) {
  const int64_t n = sdk::NumElements(t);
  switch (t.dtype) {
    case MNT_DTYPE_F32:
      if (n > 0) std::memmove(dst, t.data, n * sizeof(float));
      break;
    case MNT_DTYPE_F16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data);
      InSlices(n, [&](int64_t b, int64_t e) { HalfToFloatArray(src + b, e - b, dst + b); });
      break;
    }
    case MNT_DTYPE_BF16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data);
      InSlices(n, [&](int64_t b, int64_t e) { Bf16ToFloatArray(src + b, e - b, dst + b); });
      break;
    }
    default:
      break;  // callers check dtypes first
  }
}

std::vector<float> ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode) {
  std::vector<float> v(static_cast<size_t>(sdk::NumElements(t)));
  ReadRounded(t, mode, v.data());
  return v;
}

void ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode, float* dst) {
  ReadF32(t, dst);
  if (StorageIsExactIn(t.dtype, mode)) return;
  InSlices(sdk::NumElements(t),
           [&](int64_t b, int64_t e) { RoundArrayToCompute(dst + b, e - b, mode); });
}

void ReadBf16(const MNT_Tensor& t, uint16_t* dst) {
  const int64_t n = sdk::NumElements(t);
  switch (t.dtype) {
    case MNT_DTYPE_BF16:
      if (n > 0) std::memmove(dst, t.data, n * sizeof(uint16_t));
      break;
    case MNT_DTYPE_F32: {
      const float* src = static_cast<const float*>(t.data);
      InSlices(n, [&](int64_t b, int64_t e) { FloatToBf16Array(src + b, e - b, dst + b); });
      break;
    }
    case MNT_DTYPE_F16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data);
      InSlices(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dst[i] = FloatToBf16Bits(HalfBitsToFloat(src[i]));
      });
      break;
    }
    default:
      break;
  }
}

void ReadF32Range(const MNT_Tensor& t, int64_t offset, int64_t n, float* dst) {
  switch (t.dtype) {
    case MNT_DTYPE_F32:
      std::memcpy(dst, static_cast<const float*>(t.data) + offset, n * sizeof(float));
      break;
    case MNT_DTYPE_F16:
      HalfToFloatArray(static_cast<const uint16_t*>(t.data) + offset, n, dst);
      break;
    case MNT_DTYPE_BF16:
      Bf16ToFloatArray(static_cast<const uint16_t*>(t.data) + offset, n, dst);
      break;
    default:
      break;
  }
}

void WriteF32Range(const float* src, const MNT_Tensor& t, int64_t offset, int64_t n) {
  switch (t.dtype) {
    case MNT_DTYPE_F32:
      std::memcpy(static_cast<float*>(t.data) + offset, src, n * sizeof(float));
      break;
    case MNT_DTYPE_F16:
      FloatToHalfArray(src, n, static_cast<uint16_t*>(t.data) + offset);
      break;
    case MNT_DTYPE_BF16:
      FloatToBf16Array(src, n, static_cast<uint16_t*>(t.data) + offset);
      break;
    default:
      break;
  }
}

void WriteF32(const float* src, const MNT_Tensor& t) {
  const int64_t n = sdk::NumElements(t);
  switch (t.dtype) {
    case MNT_DTYPE_F32:
      if (n > 0) std::memmove(t.data, src, n * sizeof(float));
      break;
    case MNT_DTYPE_F16: {
      uint16_t* dst = static_cast<uint16_t*>(t.data);
      InSlices(n, [&](int64_t b, int64_t e) { FloatToHalfArray(src + b, e - b, dst + b); });
      break;
    }
    case MNT_DTYPE_BF16: {
      uint16_t* dst = static_cast<uint16_t*>(t.data);
      InSlices(n, [&](int64_t b, int64_t e) { FloatToBf16Array(src + b, e - b, dst + b); });
      break;
    }
    default:
      break;
  }
}

float* ResultTarget(const MNT_Tensor& t, bool accumulate, std::vector<float>* buf) {
  if (t.dtype == MNT_DTYPE_F32 && !accumulate) return static_cast<float*>(t.data);
  buf->resize(static_cast<size_t>(sdk::NumElements(t)));
  return buf->data();
}

void StoreResult(const float* result, const MNT_Tensor& t, bool accumulate,
                 std::vector<float>* tmp) {
  if (result == t.data) return;
  const int64_t n = sdk::NumElements(t);
  if (!accumulate) {
    WriteF32(result, t);
    return;
  }
  float* sum = static_cast<float*>(t.data);
  if (t.dtype != MNT_DTYPE_F32) {
    tmp->resize(static_cast<size_t>(n));
    ReadF32(t, tmp->data());
    sum = tmp->data();
  }
  const int threads = ThreadsFor(n);
#pragma omp parallel for simd schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < n; ++i) sum[i] += result[i];
  if (sum != t.data) WriteF32(sum, t);
}

}  // namespace mnt::cpu

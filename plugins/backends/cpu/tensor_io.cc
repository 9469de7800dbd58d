#include "plugins/backends/cpu/tensor_io.h"

#include <cstring>

#include "plugins/backends/common/float_convert.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

namespace {

// Below this many elements a conversion is not worth waking the threads.
constexpr int64_t kParallelElements = int64_t{1} << 15;

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
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) dst[i] = HalfBitsToFloat(src[i]);
      break;
    }
    case MNT_DTYPE_BF16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data);
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16BitsToFloat(src[i]);
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
  if (mode == MNT_COMPUTE_F32) return;
  const int64_t n = sdk::NumElements(t);
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
  for (int64_t i = 0; i < n; ++i) dst[i] = RoundToCompute(dst[i], mode);
}

void ReadBf16(const MNT_Tensor& t, uint16_t* dst) {
  const int64_t n = sdk::NumElements(t);
  switch (t.dtype) {
    case MNT_DTYPE_BF16:
      if (n > 0) std::memmove(dst, t.data, n * sizeof(uint16_t));
      break;
    case MNT_DTYPE_F32: {
      const float* src = static_cast<const float*>(t.data);
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBf16Bits(src[i]);
      break;
    }
    case MNT_DTYPE_F16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data);
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBf16Bits(HalfBitsToFloat(src[i]));
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
    case MNT_DTYPE_F16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = HalfBitsToFloat(src[i]);
      break;
    }
    case MNT_DTYPE_BF16: {
      const uint16_t* src = static_cast<const uint16_t*>(t.data) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16BitsToFloat(src[i]);
      break;
    }
    default:
      break;
  }
}

void WriteF32Range(const float* src, const MNT_Tensor& t, int64_t offset, int64_t n) {
  switch (t.dtype) {
    case MNT_DTYPE_F32:
      std::memcpy(static_cast<float*>(t.data) + offset, src, n * sizeof(float));
      break;
    case MNT_DTYPE_F16: {
      uint16_t* dst = static_cast<uint16_t*>(t.data) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalfBits(src[i]);
      break;
    }
    case MNT_DTYPE_BF16: {
      uint16_t* dst = static_cast<uint16_t*>(t.data) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBf16Bits(src[i]);
      break;
    }
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
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalfBits(src[i]);
      break;
    }
    case MNT_DTYPE_BF16: {
      uint16_t* dst = static_cast<uint16_t*>(t.data);
#pragma omp parallel for simd schedule(static) if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBf16Bits(src[i]);
      break;
    }
    default:
      break;
  }
}

}  // namespace mnt::cpu

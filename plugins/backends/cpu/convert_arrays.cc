#include "plugins/backends/cpu/convert_arrays.h"

#include <cpuid.h>
#include <immintrin.h>

#include <cstring>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/vector_loops.h"

namespace mnt::cpu {

namespace {

// fp32 bit patterns read and written in place of the floats (the compiler
// treats these as aliasing float, unlike a plain uint32_t*).
typedef uint32_t __attribute__((may_alias)) AliasedBits;

// F16C is CPUID.1:ECX bit 29; it encodes VEX instructions, so the OS must
// also save AVX state (which __builtin_cpu_supports("avx") checks).
bool DetectF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0 && __builtin_cpu_supports("avx");
}

// Eight lanes per instruction; the tail goes through a padded copy so every
// element sees the same instruction.
__attribute__((target("avx,f16c"))) void HalfToFloatF16c(const uint16_t* src, int64_t n,
                                                         float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {
    uint16_t in[8] = {};
    float out[8];
    std::memcpy(in, src + i, (n - i) * sizeof(uint16_t));
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(dst + i, out, (n - i) * sizeof(float));
  }
}

__attribute__((target("avx,f16c"))) void FloatToHalfF16c(const float* src, int64_t n,
                                                         uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  if (i < n) {
    float in[8] = {};
    uint16_t out[8];
    std::memcpy(in, src + i, (n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT));
    std::memcpy(dst + i, out, (n - i) * sizeof(uint16_t));
  }
}

// Round to binary16 and back, in place.
__attribute__((target("avx,f16c"))) void RoundToHalfF16c(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) x[i] = RoundToHalf(x[i]);
}

// Ties-to-even rounding of the low `shift` bits as one add: adding
// (half - 1) plus the kept part's lowest bit carries exactly when the
// dropped bits exceed half, or equal it with an odd kept part. A carry out
// of the mantissa bumps the exponent, which past the largest finite value
// gives infinity, as the scalar ShiftRightRoundNearestEven does.
inline uint32_t AddRoundingBias(uint32_t x, int shift) {
  return x + ((1u << (shift - 1)) - 1u) + ((x >> shift) & 1u);
}

inline uint32_t Bf16BitsBranchFree(uint32_t x) {
  const uint32_t rounded = AddRoundingBias(x, 16) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x0040u;
  return (x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

inline uint32_t Tf32BitsBranchFree(uint32_t x) {
  const uint32_t rounded = AddRoundingBias(x, 13) & ~0x1fffu;
  return (x & 0x7f800000u) == 0x7f800000u ? x : rounded;  // inf, NaN kept
}

}  // namespace

bool UsesF16c() {
  static const bool has = DetectF16c();
  return has;
}

namespace internal {

void HalfToFloatArrayPortable(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = HalfBitsToFloat(src[i]);
}

void FloatToHalfArrayPortable(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalfBits(src[i]);
}

}  // namespace internal

void HalfToFloatArray(const uint16_t* src, int64_t n, float* dst) {
  if (UsesF16c()) return HalfToFloatF16c(src, n, dst);
  internal::HalfToFloatArrayPortable(src, n, dst);
}

void FloatToHalfArray(const float* src, int64_t n, uint16_t* dst) {
  if (UsesF16c()) return FloatToHalfF16c(src, n, dst);
  internal::FloatToHalfArrayPortable(src, n, dst);
}

namespace {

// The bf16 loops written once and compiled three times: for AVX-512 (512-bit
// vectors, as vector_loops.h's; the AVX2 versions were still 13% of the
// 8-layer GPT's bf16 step on an AMX Xeon), for AVX2 (16 elements per
// iteration instead of baseline x86-64's SSE2 4-8) and for the baseline;
// integer arithmetic only, so the same bits.
#define MNT_BF16_LOOPS_(attr, name)                                                     \
  attr void Bf16ToFloat##name(const uint16_t* src, int64_t n, float* dst) {            \
    AliasedBits* out = reinterpret_cast<AliasedBits*>(dst);                            \
    _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) out[i] =                       \
        static_cast<uint32_t>(src[i]) << 16;                                            \
  }                                                                                     \
  attr void FloatToBf16##name(const float* src, int64_t n, uint16_t* dst) {            \
    const AliasedBits* in = reinterpret_cast<const AliasedBits*>(src);                 \
    _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) dst[i] =                       \
        static_cast<uint16_t>(Bf16BitsBranchFree(in[i]));                               \
  }

MNT_BF16_LOOPS_(__attribute__((target("arch=x86-64-v4,prefer-vector-width=512"))), Avx512)
MNT_BF16_LOOPS_(__attribute__((target("avx2"))), Avx2)
MNT_BF16_LOOPS_(, Baseline)
#undef MNT_BF16_LOOPS_

bool UsesAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Where vector_loops.h takes its AVX-512 versions (the CPU has F, BW, DQ, VL
// and CD, and the OS saves their state).
bool UsesAvx512() {
  static const bool has = Avx512Loops() != nullptr;
  return has;
}

}  // namespace

void Bf16ToFloatArray(const uint16_t* src, int64_t n, float* dst) {
  if (UsesAvx512()) return Bf16ToFloatAvx512(src, n, dst);
  if (UsesAvx2()) return Bf16ToFloatAvx2(src, n, dst);
  Bf16ToFloatBaseline(src, n, dst);
}

void FloatToBf16Array(const float* src, int64_t n, uint16_t* dst) {
  if (UsesAvx512()) return FloatToBf16Avx512(src, n, dst);
  if (UsesAvx2()) return FloatToBf16Avx2(src, n, dst);
  FloatToBf16Baseline(src, n, dst);
}

void RoundArrayToCompute(float* x, int64_t n, MNT_ComputeMode mode) {
  AliasedBits* bits = reinterpret_cast<AliasedBits*>(x);
  switch (mode) {
    case MNT_COMPUTE_TF32:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) bits[i] = Tf32BitsBranchFree(bits[i]);
      return;
    case MNT_COMPUTE_BF16:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) bits[i] = Bf16BitsBranchFree(bits[i]) << 16;
      return;
    case MNT_COMPUTE_F16:
      if (UsesF16c()) return RoundToHalfF16c(x, n);
      for (int64_t i = 0; i < n; ++i) x[i] = RoundToHalf(x[i]);
      return;
    default:
      return;
  }
}

bool StorageIsExactIn(MNT_DType storage, MNT_ComputeMode mode) {
  switch (mode) {
    case MNT_COMPUTE_F32:
      return true;
    case MNT_COMPUTE_TF32:  // 11 significant bits and fp32's exponent range
      return storage == MNT_DTYPE_F16 || storage == MNT_DTYPE_BF16;
    case MNT_COMPUTE_BF16:
      return storage == MNT_DTYPE_BF16;
    case MNT_COMPUTE_F16:
      return storage == MNT_DTYPE_F16;
    default:
      return false;
  }
}

}  // namespace mnt::cpu

// Bit-exact conversions between fp32 and the 16-bit storage formats (IEEE
// binary16, bfloat16) and tf32 rounding, all round-to-nearest-even.
//
// Pure integer bit manipulation, so results do not depend on compiler
// _Float16 support, FTZ/DAZ modes or the host FPU. NaNs keep their sign and
// as much payload as fits, and always come out quiet (as F16C/CUDA do).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_FLOAT_CONVERT_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_FLOAT_CONVERT_H_

#include <cstdint>
#include <cstring>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

MNT_HOST_DEVICE inline uint32_t FloatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

MNT_HOST_DEVICE inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Rounds `value` (an unsigned integer mantissa) right by `shift` bits,
// ties to even. shift in [1, 31].
MNT_HOST_DEVICE inline uint32_t ShiftRightRoundNearestEven(uint32_t value,
                                                           int shift) {
  const uint32_t quotient = value >> shift;
  const uint32_t remainder = value & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (remainder > half || (remainder == half && (quotient & 1u))) {
    return quotient + 1u;
  }
  return quotient;
}

// ---- IEEE binary16 ---------------------------------------------------------

MNT_HOST_DEVICE inline uint16_t F32BitsToF16Bits(uint32_t x) {
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: quiet bit + top 9 payload bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 (0x477ff000) is halfway between 65504 (odd mantissa) and 2^16, so
  // it and everything above becomes infinity.
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x38800000u) {  // >= 2^-14: a normal half.
    // Rebias the exponent (127 -> 15) and round the 13 dropped bits; a carry
    // out of the mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - (112u << 23);
    return static_cast<uint16_t>(sign |
                                 ShiftRightRoundNearestEven(rebased, 13));
  }
  // Subnormal half (or zero): count in units of 2^-24.
  const int exponent = static_cast<int>(abs >> 23);
  if (exponent < 102) return static_cast<uint16_t>(sign);  // < 2^-25: zero.
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  // value = mantissa * 2^(exponent - 150) = mantissa * 2^(exponent-126) ulps.
  const int shift = 126 - exponent;  // in [14, 24]
  return static_cast<uint16_t>(sign |
                               ShiftRightRoundNearestEven(mantissa, shift));
}

MNT_HOST_DEVICE inline uint32_t F16BitsToF32Bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) {
    if (mantissa == 0) return sign | 0x7f800000u;         // inf
    return sign | 0x7fc00000u | (mantissa << 13);         // quiet NaN
  }
  if (exponent == 0) {
    if (mantissa == 0) return sign;  // +-0
    // Subnormal: normalise so the leading 1 lands on bit 10.
    int e = 113;  // exponent of 2^-14 in fp32 is 127-14 = 113
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    return sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return sign | ((exponent + 112u) << 23) | (mantissa << 13);
}

MNT_HOST_DEVICE inline uint16_t FloatToHalfBits(float f) {
  return F32BitsToF16Bits(FloatToBits(f));
}
MNT_HOST_DEVICE inline float HalfBitsToFloat(uint16_t h) {
  return BitsToFloat(F16BitsToF32Bits(h));
}

// ---- bfloat16 --------------------------------------------------------------

MNT_HOST_DEVICE inline uint16_t F32BitsToBf16Bits(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign/payload, quiet it.
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  // Overflow past the largest bf16 carries into the exponent and gives inf.
  return static_cast<uint16_t>(ShiftRightRoundNearestEven(x, 16));
}

MNT_HOST_DEVICE inline uint32_t Bf16BitsToF32Bits(uint16_t b) {
  return static_cast<uint32_t>(b) << 16;  // exact; NaN payloads kept as is
}

MNT_HOST_DEVICE inline uint16_t FloatToBf16Bits(float f) {
  return F32BitsToBf16Bits(FloatToBits(f));
}
MNT_HOST_DEVICE inline float Bf16BitsToFloat(uint16_t b) {
  return BitsToFloat(Bf16BitsToF32Bits(b));
}

// ---- tf32 ------------------------------------------------------------------

// Rounds to 10 explicit mantissa bits (the low 13 bits become zero); the
// result is still an fp32 bit pattern. inf and NaN pass through unchanged.
MNT_HOST_DEVICE inline uint32_t F32BitsToTf32Bits(uint32_t x) {
  if ((x & 0x7f800000u) == 0x7f800000u) return x;
  return ShiftRightRoundNearestEven(x, 13) << 13;
}

MNT_HOST_DEVICE inline float RoundToTf32(float f) {
  return BitsToFloat(F32BitsToTf32Bits(FloatToBits(f)));
}

// ---- Rounding to an operand format -----------------------------------------

MNT_HOST_DEVICE inline float RoundToHalf(float f) {
  return HalfBitsToFloat(FloatToHalfBits(f));
}
MNT_HOST_DEVICE inline float RoundToBf16(float f) {
  return Bf16BitsToFloat(FloatToBf16Bits(f));
}

// `f` rounded to the format GEMM operands take in `mode` (F32: unchanged).
MNT_HOST_DEVICE inline float RoundToCompute(float f, MNT_ComputeMode mode) {
  switch (mode) {
    case MNT_COMPUTE_TF32: return RoundToTf32(f);
    case MNT_COMPUTE_BF16: return RoundToBf16(f);
    case MNT_COMPUTE_F16: return RoundToHalf(f);
    default: return f;
  }
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_FLOAT_CONVERT_H_

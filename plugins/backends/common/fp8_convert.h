// Bit-exact conversions between fp32 and the two 8-bit float formats of FP8
// training (OCP FP8 / NVIDIA Hopper):
//
//   E4M3  1 sign, 4 exponent (bias 7), 3 mantissa bits. No infinities: the
//         only specials are the NaNs S.1111.111 (0x7F, 0xFF), so S.1111.000
//         to S.1111.110 are ordinary numbers. Largest finite 448 (0x7E),
//         smallest normal 2^-6 (0x08), smallest subnormal 2^-9 (0x01).
//   E5M2  1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-like (the top
//         byte of an fp16): +-inf 0x7C / 0xFC, NaNs 0x7D-0x7F / 0xFD-0xFF.
//         Largest finite 57344 (0x7B), smallest normal 2^-14 (0x04),
//         smallest subnormal 2^-16 (0x01).
//
// fp32 -> fp8 (FloatToFp8*Bits):
//   - Round to nearest, ties to even, everywhere: within the normal range,
//     into and within the subnormals (half the smallest subnormal rounds to
//     zero), and at the top, where the value is first rounded as if the
//     exponent range went on and only then compared with the largest finite
//     value. So E4M3 overflows above 464 (halfway between 448 and the 480
//     that does not exist; 464 itself goes to 448, whose mantissa is even)
//     and E5M2 overflows from 61440 on (halfway between 57344 and 65536; the
//     tie goes to 65536's even mantissa, i.e. overflow, as fp16's 65520
//     does).
//   - saturate = true (the default; what Transformer Engine casts with, and
//     cuda_fp8.h's __NV_SATFINITE / PTX cvt.rn.satfinite): an overflow gives
//     the largest finite value with the input's sign, and so does +-inf, in
//     both formats. Scaled FP8 training wants this: an amax slightly stale
//     for this step must clip, not produce inf/NaN.
//   - saturate = false (__NV_NOSAT): an overflow, +-inf included, gives NaN
//     (0x7F with the input's sign) in E4M3, which has no infinity, and +-inf
//     (0x7C / 0xFC) in E5M2.
//   - A NaN input gives the all-ones NaN code with the input's sign (0x7F /
//     0xFF) in both formats, whatever `saturate` says: a NaN is never
//     clipped to a number. (cuda_fp8.h's float path drops the sign and
//     always gives 0x7F; either is a NaN code.)
//   - Zeros and values that round to zero keep their sign (-0 is 0x80).
//   - fp32 subnormal inputs are far below half the smallest fp8 subnormal,
//     so they become (signed) zero; no FTZ/DAZ mode is involved.
//
// fp8 -> fp32 (Fp8*BitsToFloat) is exact for every number; a NaN code gives
// the quiet fp32 NaN 0x7FC00000 with the code's sign; E5M2's infinities give
// fp32's.
//
// Pure integer bit manipulation like float_convert.h, so results do not
// depend on the host FPU, the compiler or the device: the CPU backend and
// CUDA kernels (MNT_HOST_DEVICE) get the same bits.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_FP8_CONVERT_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_FP8_CONVERT_H_

#include <cstdint>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"

namespace mnt {

// Largest finite values, for scaling (amax -> scale) code.
constexpr float kFp8E4M3Max = 448.0f;
constexpr float kFp8E5M2Max = 57344.0f;

namespace fp8_internal {

// Magnitude codes (sign bit clear) of the largest finite values.
constexpr uint32_t kE4M3MaxCode = 0x7Eu;
constexpr uint32_t kE5M2MaxCode = 0x7Bu;
constexpr uint8_t kE5M2InfCode = 0x7Cu;
constexpr uint8_t kNanCode = 0x7Fu;  // a NaN in both formats

// |x| (fp32 bits with the sign cleared, not NaN) rounded to nearest even in
// a format with `mantissa_bits` explicit mantissa bits and exponent bias
// `bias`, returned as the format's magnitude code with an exponent range
// that never ends: a result above the format's largest finite code means
// overflow (+inf lands there too). Never larger than 0x7f800000 >> 20, so
// it cannot wrap.
MNT_HOST_DEVICE inline uint32_t RoundMagnitudeToSmallFloat(uint32_t abs,
                                                           int mantissa_bits,
                                                           int bias) {
  // fp32 exponent field of the format's smallest normal, 2^(1 - bias).
  const uint32_t min_normal_field = static_cast<uint32_t>(128 - bias);
  if (abs >= (min_normal_field << 23)) {
    // Rebias the exponent (127 -> bias) and round the dropped mantissa
    // bits; a carry out of the mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - (static_cast<uint32_t>(127 - bias) << 23);
    return ShiftRightRoundNearestEven(rebased, 23 - mantissa_bits);
  }
  // Subnormal target (or zero): count in units of the smallest subnormal,
  // 2^(1 - bias - mantissa_bits). |x| = m * 2^(e - 150) with the implicit
  // bit in m, so |x| = m >> (150 + 1 - bias - mantissa_bits - e) units. A
  // carry out of the top mantissa bit lands exactly on the smallest normal.
  const int exponent = static_cast<int>(abs >> 23);
  const int shift = 151 - bias - mantissa_bits - exponent;
  // With shift > 24, |x| = m * 2^-shift units < 2^24 * 2^-25: below half a
  // unit, so zero. This also covers fp32 zeros and subnormals (exponent 0,
  // whose m would have no implicit bit). shift == 24 holds the tie at half
  // a unit, which rounds to the even zero.
  if (shift > 24) return 0u;
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  return ShiftRightRoundNearestEven(mantissa, shift);  // shift >= 1 here
}

// fp32 bits of a finite magnitude code (sign bit clear, not a special).
MNT_HOST_DEVICE inline uint32_t SmallFloatMagnitudeToF32Bits(
    uint32_t magnitude, int mantissa_bits, int bias) {
  const uint32_t mantissa_mask = (1u << mantissa_bits) - 1u;
  const uint32_t exponent = magnitude >> mantissa_bits;
  uint32_t mantissa = magnitude & mantissa_mask;
  if (exponent == 0) {
    if (mantissa == 0) return 0u;
    // Subnormal: normalise so the leading 1 lands on the implicit bit,
    // starting from the exponent of the smallest normal, 2^(1 - bias).
    uint32_t e = static_cast<uint32_t>(128 - bias);
    while ((mantissa & (1u << mantissa_bits)) == 0) {
      mantissa <<= 1;
      --e;
    }
    return (e << 23) | ((mantissa & mantissa_mask) << (23 - mantissa_bits));
  }
  return ((exponent + static_cast<uint32_t>(127 - bias)) << 23) |
         (mantissa << (23 - mantissa_bits));
}

}  // namespace fp8_internal

// ---- E4M3 ------------------------------------------------------------------

MNT_HOST_DEVICE inline float Fp8E4M3BitsToFloat(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t magnitude = b & 0x7fu;
  if (magnitude == fp8_internal::kNanCode) return BitsToFloat(sign | 0x7fc00000u);
  return BitsToFloat(sign | fp8_internal::SmallFloatMagnitudeToF32Bits(magnitude, 3, 7));
}

MNT_HOST_DEVICE inline uint8_t FloatToFp8E4M3Bits(float f, bool saturate = true) {
  const uint32_t x = FloatToBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint8_t>(sign | fp8_internal::kNanCode);
  // +-inf rounds to a code far above the largest and takes the overflow
  // branch: the largest finite value, or NaN (E4M3 has no infinity).
  const uint32_t code = fp8_internal::RoundMagnitudeToSmallFloat(abs, 3, 7);
  if (code > fp8_internal::kE4M3MaxCode) {
    return static_cast<uint8_t>(
        sign | (saturate ? fp8_internal::kE4M3MaxCode : fp8_internal::kNanCode));
  }
  return static_cast<uint8_t>(sign | code);
}

// ---- E5M2 ------------------------------------------------------------------

MNT_HOST_DEVICE inline float Fp8E5M2BitsToFloat(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t magnitude = b & 0x7fu;
  if (magnitude >= fp8_internal::kE5M2InfCode) {  // exponent field all ones
    return BitsToFloat(sign | (magnitude == fp8_internal::kE5M2InfCode ? 0x7f800000u
                                                                       : 0x7fc00000u));
  }
  return BitsToFloat(sign | fp8_internal::SmallFloatMagnitudeToF32Bits(magnitude, 2, 15));
}

MNT_HOST_DEVICE inline uint8_t FloatToFp8E5M2Bits(float f, bool saturate = true) {
  const uint32_t x = FloatToBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint8_t>(sign | fp8_internal::kNanCode);
  // +-inf rounds to a code far above the largest and takes the overflow
  // branch: the largest finite value, or +-inf again.
  const uint32_t code = fp8_internal::RoundMagnitudeToSmallFloat(abs, 2, 15);
  if (code > fp8_internal::kE5M2MaxCode) {
    return static_cast<uint8_t>(
        sign | (saturate ? fp8_internal::kE5M2MaxCode : fp8_internal::kE5M2InfCode));
  }
  return static_cast<uint8_t>(sign | code);
}

// ---- Rounding to an FP8 format (emulation) ---------------------------------

// `f` as the fp32 value of its FP8 encoding: what a tensor stored in FP8
// and read back holds. Saturating by default, like the casts above.
MNT_HOST_DEVICE inline float RoundToFp8E4M3(float f, bool saturate = true) {
  return Fp8E4M3BitsToFloat(FloatToFp8E4M3Bits(f, saturate));
}
MNT_HOST_DEVICE inline float RoundToFp8E5M2(float f, bool saturate = true) {
  return Fp8E5M2BitsToFloat(FloatToFp8E5M2Bits(f, saturate));
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_FP8_CONVERT_H_

// Blockwise dynamic quantization of optimizer state (ABI 1.12,
// ADAMW8BIT_STEP; Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization", as bitsandbytes stores Adam's moments): a state tensor is
// cut into blocks of kQuantizationBlock elements; each block keeps its
// absmax (fp32) and one byte per element, an index into a 256-entry map of
// values in [-1, 1]; an element is map[code] * absmax.
//
// The maps are bitsandbytes' "dynamic" (tree) maps with 7 exponent bits:
// the positive values fall into 7 decades, decade i (0..6) holding K_i
// values 10^(i-6) * (0.1 + 0.9 (j + 1/2) / K_i), j < K_i, the midpoints of
// K_i equal steps of [0.1, 1) scaled by the decade, so small magnitudes keep
// relative resolution. The signed map (Adam's first moment) has K_i = 2^i
// (127 values), their negatives, 0 and 1; the unsigned map (the second
// moment, never negative) uses the sign bit as one more fraction bit: K_i =
// 2^(i+1) (254 values), 0 and 1. Codes are the values' ranks, ascending.
//
// Deviation from bitsandbytes, and why: bitsandbytes builds its maps with
// torch.linspace in fp32 and rounds the product with 10^(i-6); here each
// value is the exact rational (2 K + 9 (2 j + 1)) / (20 K 10^(6-i)) rounded
// once to fp32, so the host and the device compute the same table from
// integer arithmetic and one correctly rounded division (an entry may differ
// from bitsandbytes' by an ulp). Quantization is to the nearest value (ties
// to the lower code, as bitsandbytes' search), with bitsandbytes' sign guard
// for the signed map (a negative value never becomes the code of +0).
//
// Every function is MNT_HOST_DEVICE and uses only correctly rounded
// operations, so the CPU backend and the CUDA kernels write the same codes.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_BLOCKWISE_QUANTIZATION_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_BLOCKWISE_QUANTIZATION_H_

#include <cstdint>

#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/rounded_arith.h"
#include "plugins/sdk/loss_scale_math.h"

namespace mnt {

// Elements per quantization block (bitsandbytes' BLOCKSIZE_2STATE; the paper
// used 2048): small enough that one outlier costs a block little resolution.
constexpr int kQuantizationBlock = 256;
// Entries of a map: every value of one byte.
constexpr int kQuantizationCodes = 256;
// The signed map's code of 0 (127 negative values below it).
constexpr int kSignedZeroCode = 127;

// Blocks of a tensor of n elements (the last may be partial).
MNT_HOST_DEVICE inline int64_t QuantizationBlocks(int64_t n) {
  return (n + kQuantizationBlock - 1) / kQuantizationBlock;
}

// Value j of decade `decade` with k values: (2k + 9(2j + 1)) / (20 k 10^(6 -
// decade)), every integer exact in double, one division rounded to nearest
// and then to fp32.
MNT_HOST_DEVICE inline float DynamicDecadeValue(int decade, int64_t j, int64_t k) {
  int64_t den = 20 * k;
  for (int e = decade; e < 6; ++e) den *= 10;
  const double num = static_cast<double>(2 * k + 9 * (2 * j + 1));
#ifdef __CUDA_ARCH__
  const double v = __ddiv_rn(num, static_cast<double>(den));
#else
  const double v = num / static_cast<double>(den);
#endif
  return static_cast<float>(v);
}

// The value of `code` (0..255) in the signed or the unsigned dynamic map.
MNT_HOST_DEVICE inline float DynamicMapValue(int code, bool is_signed) {
  if (code == kQuantizationCodes - 1) return 1.0f;
  if (is_signed) {
    if (code == kSignedZeroCode) return 0.0f;
    // Positive rank r in [0, 127): decade i holds ranks [2^i - 1, 2^(i+1) - 1).
    const bool negative = code < kSignedZeroCode;
    const int r = negative ? kSignedZeroCode - 1 - code : code - kSignedZeroCode - 1;
    int decade = 0;
    while (r >= (2 << decade) - 1) ++decade;
    const int64_t k = int64_t{1} << decade;
    const float v = DynamicDecadeValue(decade, r - (k - 1), k);
    return negative ? -v : v;
  }
  if (code == 0) return 0.0f;
  // Rank r in [0, 254): decade i holds ranks [2^(i+1) - 2, 2^(i+2) - 2).
  const int r = code - 1;
  int decade = 0;
  while (r >= (4 << decade) - 2) ++decade;
  const int64_t k = int64_t{2} << decade;
  return DynamicDecadeValue(decade, r - (k - 2), k);
}

// The whole map, ascending (a kernel builds it once per launch or block).
MNT_HOST_DEVICE inline void BuildDynamicMap(bool is_signed, float map[kQuantizationCodes]) {
  for (int c = 0; c < kQuantizationCodes; ++c) map[c] = DynamicMapValue(c, is_signed);
}

// The code whose value is nearest to x in `map` (ascending): a binary search
// for the last value <= x, then the nearer of it and the next by their exact
// midpoint, ties to the lower code (bitsandbytes' quantize). Below the first
// value, and NaN: code 0 (a NaN's block has a NaN absmax, see AbsMaxCombine,
// so the element stays NaN). Signed map: a negative x whose
// nearest value is +0 takes the code below it, the smallest negative value
// (bitsandbytes' sign guard keeps the first moment's sign).
MNT_HOST_DEVICE inline uint8_t QuantizeNearest(const float* map, float x, bool is_signed) {
  int lower = 0;
  for (int step = kQuantizationCodes / 2; step > 0; step >>= 1) {
    if (map[lower + step] <= x) lower += step;
  }
  int code = lower;
  if (lower < kQuantizationCodes - 1) {
    // The exact midpoint: two floats add exactly in double, and halving is
    // exact (an fp32 midpoint would round, and misplace ties by an ulp).
    const double mid = MulRn(AddRn(static_cast<double>(map[lower]),
                                   static_cast<double>(map[lower + 1])),
                             0.5);
    if (static_cast<double>(x) > mid) code = lower + 1;
  }
  if (is_signed && (FloatToBits(x) >> 31) != 0 && map[code] == 0.0f) {
    code -= 1;
  }
  return static_cast<uint8_t>(code);
}

// An element of a block: map[code] * absmax, rounded once.
MNT_HOST_DEVICE inline float Dequantize(const float* map, uint8_t code, float absmax) {
  return MulF32(map[code], absmax);
}

// max(|a|, |b|) as a block's absmax grows, NaN when either is NaN: the
// combination is commutative and associative, so a block's absmax is the
// same bits in any order (one thread, or a warp's tree), and a NaN state
// element makes its whole block NaN instead of quietly dropping it.
MNT_HOST_DEVICE inline float AbsMaxCombine(float a, float b) {
  const float x = BitsToFloat(FloatToBits(a) & 0x7fffffffu);
  const float y = BitsToFloat(FloatToBits(b) & 0x7fffffffu);
  if (x != x) return x;
  if (y != y) return y;
  return x > y ? x : y;
}

// The code of `value` in a block whose new absmax is `absmax`: value / absmax
// (in [-1, 1]) to the nearest map entry; an all-zero block (absmax 0) and a
// NaN or infinite absmax give the code of 0 (the element is 0 or NaN when
// dequantized, as the block is).
MNT_HOST_DEVICE inline uint8_t Requantize(const float* map, float value, float absmax,
                                          bool is_signed) {
  const bool finite_positive = absmax > 0.0f && absmax <= 3.4028234663852886e38f;
  const float x = finite_positive ? DivF32(value, absmax) : 0.0f;
  return QuantizeNearest(map, x, is_signed);
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_BLOCKWISE_QUANTIZATION_H_

// conv_io.h on the CPU: the io dtype per compute mode and output dtype, which
// operands are read in place, and the premise of the fp32 path: every bf16
// and fp16 value is exact in TF32 (rounding it to TF32 changes no bit), and
// so is the product of two such values in fp32.
#include "plugins/backends/cuda/conv_io.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::cuda {
namespace {

constexpr MNT_DType kTypes[] = {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16};

TEST(ConvIoTest, SixteenBitIoOnlyForAnOutputStoredInTheComputeFormat) {
  for (MNT_DType out : kTypes) {
    EXPECT_EQ(ConvIoType(MNT_COMPUTE_F32, out), MNT_DTYPE_F32);
    EXPECT_EQ(ConvIoType(MNT_COMPUTE_TF32, out), MNT_DTYPE_F32);
  }
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_BF16, MNT_DTYPE_BF16), MNT_DTYPE_BF16);
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_F16, MNT_DTYPE_F16), MNT_DTYPE_F16);
  // Mixed storage: fp32 (or the other 16-bit format) out, fp32 io.
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_BF16, MNT_DTYPE_F32), MNT_DTYPE_F32);
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_F16, MNT_DTYPE_F32), MNT_DTYPE_F32);
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_BF16, MNT_DTYPE_F16), MNT_DTYPE_F32);
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_F16, MNT_DTYPE_BF16), MNT_DTYPE_F32);
}

// A forward with a bias keeps cuDNN's result in fp32 until the bias is
// added: one rounding into the 16-bit output, never two.
TEST(ConvIoTest, ForwardWithBiasRunsOnFp32Io) {
  for (MNT_ComputeMode mode :
       {MNT_COMPUTE_F32, MNT_COMPUTE_TF32, MNT_COMPUTE_BF16, MNT_COMPUTE_F16}) {
    for (MNT_DType out : kTypes) {
      EXPECT_EQ(ConvIoType(mode, out, true), MNT_DTYPE_F32) << mode << " " << out;
    }
  }
  // Without one the 16-bit path stays.
  EXPECT_EQ(ConvIoType(MNT_COMPUTE_BF16, MNT_DTYPE_BF16, false), MNT_DTYPE_BF16);
}

// Why it matters: rounding a + b once differs from rounding round(a) + b for
// some values (here in bf16), so the two-rounding path was not the reference.
TEST(ConvIoTest, RoundingTwiceDiffersFromRoundingOnce) {
  const float a = 1.0f + 3.0f / 512.0f;  // between bf16 neighbours 1 + 1/128 steps
  const float bias = 1.0f / 256.0f + 1.0f / 65536.0f;
  const float once = Bf16BitsToFloat(FloatToBf16Bits(a + bias));
  const float twice =
      Bf16BitsToFloat(FloatToBf16Bits(Bf16BitsToFloat(FloatToBf16Bits(a)) + bias));
  EXPECT_NE(once, twice);
}

TEST(ConvIoTest, OperandsNeedingRoundingAreNeverReadInPlace) {
  // 16-bit io: only that format in place.
  EXPECT_TRUE(ConvOperandInPlace(MNT_DTYPE_BF16, MNT_COMPUTE_BF16, MNT_DTYPE_BF16));
  EXPECT_FALSE(ConvOperandInPlace(MNT_DTYPE_F32, MNT_COMPUTE_BF16, MNT_DTYPE_BF16));
  EXPECT_FALSE(ConvOperandInPlace(MNT_DTYPE_F16, MNT_COMPUTE_BF16, MNT_DTYPE_BF16));
  // fp32 io under a 16-bit mode: every operand is staged (rounded/widened).
  for (MNT_DType t : kTypes) {
    EXPECT_FALSE(ConvOperandInPlace(t, MNT_COMPUTE_BF16, MNT_DTYPE_F32)) << t;
    EXPECT_FALSE(ConvOperandInPlace(t, MNT_COMPUTE_F16, MNT_DTYPE_F32)) << t;
  }
  // fp32/tf32: fp32 operands in place, 16-bit ones widened.
  EXPECT_TRUE(ConvOperandInPlace(MNT_DTYPE_F32, MNT_COMPUTE_F32, MNT_DTYPE_F32));
  EXPECT_TRUE(ConvOperandInPlace(MNT_DTYPE_F32, MNT_COMPUTE_TF32, MNT_DTYPE_F32));
  EXPECT_FALSE(ConvOperandInPlace(MNT_DTYPE_BF16, MNT_COMPUTE_TF32, MNT_DTYPE_F32));
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// All 2 x 65536 16-bit patterns (NaNs aside): exact in TF32.
TEST(ConvIoTest, EverySixteenBitValueIsExactInTf32) {
  int checked = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    for (const float v : {HalfBitsToFloat(static_cast<uint16_t>(h)),
                          Bf16BitsToFloat(static_cast<uint16_t>(h))}) {
      if (std::isnan(v)) continue;
      ASSERT_TRUE(SameBits(RoundToTf32(v), v)) << "pattern " << h << " value " << v;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 65536 - 2046 - 254);  // less fp16 and bf16 NaNs
}

// The product of two values with 11-bit significands fits fp32's 24 bits:
// exact, so the fp32 path multiplies exactly what the 16-bit path would.
TEST(ConvIoTest, ProductsOfSixteenBitValuesAreExactInFp32) {
  for (uint32_t a = 0x3c00; a < 0x3c00 + 1024; a += 7) {      // fp16 [1, 2)
    for (uint32_t b = 0x3c00; b < 0x3c00 + 1024; b += 13) {
      const float x = HalfBitsToFloat(static_cast<uint16_t>(a));
      const float y = HalfBitsToFloat(static_cast<uint16_t>(b));
      ASSERT_EQ(static_cast<double>(x * y), static_cast<double>(x) * y) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

// The array conversions against the scalar reference (common/float_convert.h),
// bit for bit: every binary16 and bf16 pattern, a strided sweep of the fp32
// patterns (a fresh random start each run) with each rounding boundary's
// neighbourhood dense, and fresh random patterns. Both binary16 paths (F16C
// where the CPU has it, and the portable one) are checked.
#include "plugins/backends/cpu/convert_arrays.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::cpu {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint32_t ToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

uint32_t FreshSeed() {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  return seed;
}

// fp32 patterns that exercise every branch of the scalar conversions: a
// strided sweep of all 2^32, the neighbourhood of each boundary, and random.
std::vector<float> Fp32Patterns() {
  std::mt19937 rng(FreshSeed());
  std::vector<float> v;
  const uint32_t stride = 4099;
  for (uint64_t u = rng() % stride; u <= 0xffffffffu; u += stride) {
    v.push_back(FromBits(static_cast<uint32_t>(u)));
  }
  const uint32_t boundaries[] = {
      0x00000000u, 0x00800000u,  // zero, smallest normal
      0x33000000u, 0x33800000u,  // 2^-25, 2^-24: binary16's zero/subnormal edge
      0x38800000u,               // 2^-14: binary16's smallest normal
      0x477fe000u, 0x477ff000u,  // 65504, halfway to 2^16
      0x7f7f8000u, 0x7f7fffffu,  // bf16 rounding to infinity, largest float
      0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu,  // inf, NaNs
  };
  for (uint32_t b : boundaries) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (int64_t d = -5000; d <= 5000; ++d) {
        const int64_t u = static_cast<int64_t>(b) + d;
        if (u < 0 || u > 0x7fffffff) continue;
        v.push_back(FromBits(static_cast<uint32_t>(u) | sign));
      }
    }
  }
  // Ties and their neighbours at each dropped-bit width, every exponent.
  for (uint32_t e = 0; e < 256; ++e) {
    for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u, 0x3000u, 0x7fffu, 0x8000u, 0x8001u, 0x18000u}) {
      for (uint32_t odd : {0u, 0x2000u, 0x10000u}) {
        v.push_back(FromBits((e << 23) | low | odd));
        v.push_back(FromBits(0x80000000u | (e << 23) | low | odd));
      }
    }
  }
  for (int i = 0; i < 200000; ++i) v.push_back(FromBits(static_cast<uint32_t>(rng())));
  return v;
}

std::vector<uint16_t> All16BitPatterns() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

TEST(ConvertArraysTest, HalfToFloatEveryPattern) {
  std::printf("F16C: %s\n", UsesF16c() ? "yes" : "no");
  const std::vector<uint16_t> h = All16BitPatterns();
  std::vector<float> fast(h.size()), portable(h.size());
  HalfToFloatArray(h.data(), static_cast<int64_t>(h.size()), fast.data());
  internal::HalfToFloatArrayPortable(h.data(), static_cast<int64_t>(h.size()), portable.data());
  for (size_t i = 0; i < h.size(); ++i) {
    const uint32_t want = F16BitsToF32Bits(h[i]);
    ASSERT_EQ(ToBits(fast[i]), want) << "half 0x" << std::hex << h[i];
    ASSERT_EQ(ToBits(portable[i]), want) << "half 0x" << std::hex << h[i];
  }
}

TEST(ConvertArraysTest, FloatToHalfMatchesScalar) {
  const std::vector<float> f = Fp32Patterns();
  std::vector<uint16_t> fast(f.size()), portable(f.size());
  FloatToHalfArray(f.data(), static_cast<int64_t>(f.size()), fast.data());
  internal::FloatToHalfArrayPortable(f.data(), static_cast<int64_t>(f.size()), portable.data());
  for (size_t i = 0; i < f.size(); ++i) {
    const uint16_t want = FloatToHalfBits(f[i]);
    ASSERT_EQ(fast[i], want) << "fp32 0x" << std::hex << ToBits(f[i]);
    ASSERT_EQ(portable[i], want) << "fp32 0x" << std::hex << ToBits(f[i]);
  }
}

TEST(ConvertArraysTest, Bf16BothWays) {
  const std::vector<uint16_t> b = All16BitPatterns();
  std::vector<float> widened(b.size());
  Bf16ToFloatArray(b.data(), static_cast<int64_t>(b.size()), widened.data());
  for (size_t i = 0; i < b.size(); ++i) {
    ASSERT_EQ(ToBits(widened[i]), Bf16BitsToF32Bits(b[i])) << "bf16 0x" << std::hex << b[i];
  }
  const std::vector<float> f = Fp32Patterns();
  std::vector<uint16_t> narrowed(f.size());
  FloatToBf16Array(f.data(), static_cast<int64_t>(f.size()), narrowed.data());
  for (size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(narrowed[i], FloatToBf16Bits(f[i])) << "fp32 0x" << std::hex << ToBits(f[i]);
  }
}

TEST(ConvertArraysTest, RoundingToEachComputeModeMatchesScalar) {
  const std::vector<float> f = Fp32Patterns();
  for (MNT_ComputeMode mode :
       {MNT_COMPUTE_F32, MNT_COMPUTE_TF32, MNT_COMPUTE_BF16, MNT_COMPUTE_F16}) {
    std::vector<float> x = f;
    RoundArrayToCompute(x.data(), static_cast<int64_t>(x.size()), mode);
    for (size_t i = 0; i < f.size(); ++i) {
      ASSERT_EQ(ToBits(x[i]), ToBits(RoundToCompute(f[i], mode)))
          << "mode " << mode << " fp32 0x" << std::hex << ToBits(f[i]);
    }
  }
}

// Odd lengths and offsets: the vector loops' tails and unaligned starts.
TEST(ConvertArraysTest, TailsAndUnalignedSlices) {
  std::mt19937 rng(FreshSeed());
  std::vector<float> f(64);
  for (float& x : f) x = std::uniform_real_distribution<float>(-70000.0f, 70000.0f)(rng);
  for (int64_t offset = 0; offset < 9; ++offset) {
    for (int64_t n = 0; n + offset <= 40; ++n) {
      std::vector<uint16_t> h(n + 2, 0xabcd);
      FloatToHalfArray(f.data() + offset, n, h.data() + 1);
      EXPECT_EQ(h[0], 0xabcd);
      EXPECT_EQ(h[n + 1], 0xabcd) << "wrote past the end, n=" << n;
      std::vector<float> back(n + 2, -1.0f);
      HalfToFloatArray(h.data() + 1, n, back.data() + 1);
      EXPECT_EQ(back[n + 1], -1.0f) << "wrote past the end, n=" << n;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(h[i + 1], FloatToHalfBits(f[offset + i]));
        ASSERT_EQ(ToBits(back[i + 1]), F16BitsToF32Bits(h[i + 1]));
      }
    }
  }
}

// StorageIsExactIn is what lets ReadRounded skip rounding: check the claim on
// every stored pattern, and that each "false" has a value that does change.
TEST(ConvertArraysTest, StorageExactnessClaims) {
  const std::vector<uint16_t> patterns = All16BitPatterns();
  for (MNT_DType storage : {MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    for (MNT_ComputeMode mode :
         {MNT_COMPUTE_F32, MNT_COMPUTE_TF32, MNT_COMPUTE_BF16, MNT_COMPUTE_F16}) {
      int changed = 0;
      for (uint16_t p : patterns) {
        const float v = storage == MNT_DTYPE_F16 ? HalfBitsToFloat(p) : Bf16BitsToFloat(p);
        if (v != v) continue;  // NaN payloads are not values
        if (ToBits(RoundToCompute(v, mode)) != ToBits(v)) ++changed;
      }
      EXPECT_EQ(StorageIsExactIn(storage, mode), changed == 0)
          << "storage " << storage << " mode " << mode << ": " << changed << " values change";
    }
  }
  EXPECT_TRUE(StorageIsExactIn(MNT_DTYPE_F32, MNT_COMPUTE_F32));
  EXPECT_FALSE(StorageIsExactIn(MNT_DTYPE_F32, MNT_COMPUTE_TF32));
}

}  // namespace
}  // namespace mnt::cpu

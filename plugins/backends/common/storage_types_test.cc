// storage_types.h on the CPU: every specialised storage type loads and stores
// exactly the bits of the run-time dtype switch (tensor_access.h) it
// replaces in the CUDA kernels, over every 16-bit pattern and random fp32
// values with the special ones (NaN, infinities, subnormals, signed zeros)
// mixed in; CommonDType and WithStorage pick the type a launch runs.
#include "plugins/backends/common/storage_types.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace mnt {
namespace {

uint32_t Seed() {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  return seed;
}

// Random fp32 values: raw bit patterns (NaNs with payloads, subnormals, any
// exponent) plus the special values.
std::vector<float> Values(std::mt19937& rng, int count) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min(),
                          65504.0f,
                          65520.0f,
                          std::numeric_limits<float>::max()};
  while (static_cast<int>(v.size()) < count) v.push_back(BitsToFloat(rng()));
  return v;
}

template <typename S>
void ExpectLoadsLikeTheSwitch(MNT_DType dtype) {
  static_assert(S::kDType != MNT_DTYPE_INVALID);
  if constexpr (S::kBytes == 2) {
    std::vector<uint16_t> all(65536);
    for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
    for (int64_t i = 0; i < 65536; ++i) {
      ASSERT_EQ(FloatToBits(S::Load(all.data(), MNT_DTYPE_INVALID, i)),
                FloatToBits(LoadAsFloat(all.data(), dtype, i)))
          << "bits " << i;
      ASSERT_EQ(FloatToBits(AnyStorage::Load(all.data(), dtype, i)),
                FloatToBits(LoadAsFloat(all.data(), dtype, i)));
    }
  } else {
    std::mt19937 rng(Seed());
    const std::vector<float> v = Values(rng, 4096);
    for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
      ASSERT_EQ(FloatToBits(S::Load(v.data(), MNT_DTYPE_INVALID, i)),
                FloatToBits(LoadAsFloat(v.data(), dtype, i)));
    }
  }
}

template <typename S>
void ExpectStoresLikeTheSwitch(MNT_DType dtype) {
  std::mt19937 rng(Seed());
  const std::vector<float> v = Values(rng, 20000);
  const size_t n = v.size();
  std::vector<unsigned char> typed(n * S::kBytes, 0xcd), any(n * S::kBytes, 0xcd),
      reference(n * S::kBytes, 0xab);
  for (size_t i = 0; i < n; ++i) {
    S::Store(typed.data(), MNT_DTYPE_INVALID, static_cast<int64_t>(i), v[i]);
    AnyStorage::Store(any.data(), dtype, static_cast<int64_t>(i), v[i]);
    StoreFromFloat(reference.data(), dtype, static_cast<int64_t>(i), v[i]);
  }
  EXPECT_EQ(std::memcmp(typed.data(), reference.data(), typed.size()), 0);
  EXPECT_EQ(std::memcmp(any.data(), reference.data(), any.size()), 0);
}

TEST(StorageTypes, LoadsMatchTheDtypeSwitch) {
  ExpectLoadsLikeTheSwitch<F32Storage>(MNT_DTYPE_F32);
  ExpectLoadsLikeTheSwitch<F16Storage>(MNT_DTYPE_F16);
  ExpectLoadsLikeTheSwitch<Bf16Storage>(MNT_DTYPE_BF16);
}

TEST(StorageTypes, StoresMatchTheDtypeSwitch) {
  ExpectStoresLikeTheSwitch<F32Storage>(MNT_DTYPE_F32);
  ExpectStoresLikeTheSwitch<F16Storage>(MNT_DTYPE_F16);
  ExpectStoresLikeTheSwitch<Bf16Storage>(MNT_DTYPE_BF16);
}

TEST(StorageTypes, CommonDTypeIgnoresAbsentOperands) {
  EXPECT_EQ(CommonDType({MNT_DTYPE_BF16, MNT_DTYPE_BF16}), MNT_DTYPE_BF16);
  EXPECT_EQ(CommonDType({MNT_DTYPE_F16, MNT_DTYPE_INVALID, MNT_DTYPE_F16}), MNT_DTYPE_F16);
  EXPECT_EQ(CommonDType({MNT_DTYPE_INVALID, MNT_DTYPE_F32}), MNT_DTYPE_F32);
  EXPECT_EQ(CommonDType({MNT_DTYPE_F32, MNT_DTYPE_BF16}), MNT_DTYPE_INVALID);
  EXPECT_EQ(CommonDType({MNT_DTYPE_BF16, MNT_DTYPE_BF16, MNT_DTYPE_F16}), MNT_DTYPE_INVALID);
  EXPECT_EQ(CommonDType({MNT_DTYPE_INVALID, MNT_DTYPE_INVALID}), MNT_DTYPE_INVALID);
  EXPECT_EQ(CommonDType({}), MNT_DTYPE_INVALID);
}

TEST(StorageTypes, WithStoragePicksTheTypeOfTheDtype) {
  auto picked = [](MNT_DType d) {
    return WithStorage(d, [](auto s) { return decltype(s)::kDType; });
  };
  EXPECT_EQ(picked(MNT_DTYPE_F32), MNT_DTYPE_F32);
  EXPECT_EQ(picked(MNT_DTYPE_F16), MNT_DTYPE_F16);
  EXPECT_EQ(picked(MNT_DTYPE_BF16), MNT_DTYPE_BF16);
  EXPECT_EQ(picked(MNT_DTYPE_INVALID), MNT_DTYPE_INVALID);  // AnyStorage
  EXPECT_EQ(picked(MNT_DTYPE_I32), MNT_DTYPE_INVALID);
}

TEST(StorageTypes, WithStoragePairPicksBothTypes) {
  const MNT_DType floats[] = {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16};
  for (MNT_DType a : floats) {
    for (MNT_DType b : floats) {
      const auto [got_a, got_b] = WithStoragePair(a, b, [](auto x, auto y) {
        return std::pair<MNT_DType, MNT_DType>(decltype(x)::kDType, decltype(y)::kDType);
      });
      EXPECT_EQ(got_a, a);
      EXPECT_EQ(got_b, b);
    }
  }
  // Anything else: both switch per element (AnyStorage), never a guess.
  for (auto [a, b] : {std::pair{MNT_DTYPE_F32, MNT_DTYPE_I32},
                      std::pair{MNT_DTYPE_INVALID, MNT_DTYPE_BF16},
                      std::pair{MNT_DTYPE_F64, MNT_DTYPE_F64}}) {
    const auto [got_a, got_b] = WithStoragePair(a, b, [](auto x, auto y) {
      return std::pair<MNT_DType, MNT_DType>(decltype(x)::kDType, decltype(y)::kDType);
    });
    EXPECT_EQ(got_a, MNT_DTYPE_INVALID);
    EXPECT_EQ(got_b, MNT_DTYPE_INVALID);
  }
}

}  // namespace
}  // namespace mnt

#include "trainer/debug/tensor_stats.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::trainer {
namespace {

TEST(MeasureTensor, Fp32AgainstADoubleReference) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0, 100);
  std::vector<float> v(1000);
  for (float& x : v) x = dist(rng);
  v[17] = std::numeric_limits<float>::infinity();
  v[400] = -std::numeric_limits<float>::infinity();
  v[999] = std::nanf("");
  double lo = 1e300, hi = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) continue;
    lo = std::min(lo, std::fabs(static_cast<double>(v[i])));
    hi = std::max(hi, std::fabs(static_cast<double>(v[i])));
  }
  const TensorStats s = MeasureTensor(MNT_DTYPE_F32, v.data(), static_cast<int64_t>(v.size()));
  EXPECT_TRUE(s.measured);
  EXPECT_EQ(s.elements, 1000);
  EXPECT_EQ(s.nonfinite, 3);
  EXPECT_EQ(s.nans, 1);
  EXPECT_EQ(s.abs_min, lo);
  EXPECT_EQ(s.abs_max, hi);
  EXPECT_NE(FormatStats(s).find("3 inf/NaN (1 NaN) of 1000"), std::string::npos) << FormatStats(s);
}

TEST(MeasureTensor, SixteenBitFormats) {
  // fp16: 65504 is the largest finite value; 0x7C00 is +inf.
  const std::vector<uint16_t> half = {0x7BFF, 0x3C00, 0x7C00, 0xBC00};
  const TensorStats h = MeasureTensor(MNT_DTYPE_F16, half.data(), 4);
  EXPECT_EQ(h.nonfinite, 1);
  EXPECT_EQ(h.abs_max, 65504);
  EXPECT_EQ(h.abs_min, 1);
  // bf16: 0x7FC0 is a NaN, 0x4000 is 2.
  const std::vector<uint16_t> bf = {0x4000, 0x7FC0};
  const TensorStats b = MeasureTensor(MNT_DTYPE_BF16, bf.data(), 2);
  EXPECT_EQ(b.nans, 1);
  EXPECT_EQ(b.abs_max, 2);
}

TEST(MeasureTensor, OtherDtypesAreNotMeasured) {
  const int32_t ids[2] = {1, 2};
  EXPECT_FALSE(MeasureTensor(MNT_DTYPE_I32, ids, 2).measured);
  EXPECT_EQ(FormatStats(MeasureTensor(MNT_DTYPE_I32, ids, 2)), "not measured");
}

TEST(MeasureTensor, AllNonFinite) {
  const float v[2] = {std::numeric_limits<float>::infinity(), std::nanf("")};
  const TensorStats s = MeasureTensor(MNT_DTYPE_F32, v, 2);
  EXPECT_EQ(s.nonfinite, 2);
  EXPECT_EQ(s.abs_min, 0);
  EXPECT_EQ(s.abs_max, 0);
}

}  // namespace
}  // namespace mnt::trainer

// BIAS_GRAD, REDUCE, GLOBAL_NORM_SQUARED, NONFINITE_CHECK_UNSCALE.
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;
using testing::DTypeTolerance;
using testing::FloatDTypes;

class ReduceTest : public BackendFixture {};

TEST_F(ReduceTest, BiasGradOverwriteAndAccumulate) {
  constexpr int64_t kM = 37, kN = 23;
  for (MNT_DType dtype : FloatDTypes()) {
    const std::vector<double> dy = Stored(Random(kM * kN), dtype);
    const std::vector<double> db0 = Stored(Random(kN), dtype);
    MNT_Tensor tdy = Upload(dy, dtype, {kM, kN});
    MNT_Tensor tdb = Upload(db0, dtype, {kN});
    std::vector<double> sum(kN, 0.0), acc(db0);
    for (int64_t r = 0; r < kM; ++r)
      for (int64_t j = 0; j < kN; ++j) sum[j] += dy[r * kN + j];
    for (int64_t j = 0; j < kN; ++j) acc[j] += sum[j];
    MNT_AccumulateParams p{MNT_AccumulateParams_STRUCT_SIZE, 1};
    ASSERT_TRUE(Run(MNT_OP_BIAS_GRAD, {tdy}, {tdb}, &p).ok());
    EXPECT_TRUE(AllCloseRelative(Download(tdb), acc, DTypeTolerance(dtype)));
    ASSERT_TRUE(Run(MNT_OP_BIAS_GRAD, {tdy}, {tdb}).ok());  // NULL: overwrite
    EXPECT_TRUE(AllCloseRelative(Download(tdb), sum, DTypeTolerance(dtype)));
  }
}

TEST_F(ReduceTest, SumMeanMax) {
  for (MNT_DType dtype : FloatDTypes()) {
    const std::vector<double> x = Stored(Random(1001, -2, 1), dtype);
    MNT_Tensor tx = Upload(x, dtype, {7, 11, 13});
    MNT_Tensor out = Empty(MNT_DTYPE_F32, {1});
    double sum = 0, max = x[0];
    for (double v : x) { sum += v; max = std::max(max, v); }
    for (auto [kind, want] : {std::pair{MNT_REDUCE_SUM, sum},
                              std::pair{MNT_REDUCE_MEAN, sum / x.size()},
                              std::pair{MNT_REDUCE_MAX, max}}) {
      MNT_ReduceParams p{MNT_ReduceParams_STRUCT_SIZE, kind};
      ASSERT_TRUE(Run(MNT_OP_REDUCE, {tx}, {out}, &p).ok());
      EXPECT_TRUE(AllCloseRelative(Download(out), {want}, 1e-6)) << kind;
    }
  }
}

TEST_F(ReduceTest, GlobalNormSquaredOverMixedDTypes) {
  const std::vector<double> a = Stored(Random(300), MNT_DTYPE_F32);
  const std::vector<double> b = Stored(Random(77), MNT_DTYPE_BF16);
  const std::vector<double> c = Stored(Random(5), MNT_DTYPE_F16);
  MNT_Tensor out = Empty(MNT_DTYPE_F32, {1});
  ASSERT_TRUE(Run(MNT_OP_GLOBAL_NORM_SQUARED,
                  {Upload(a, MNT_DTYPE_F32, {300}), Upload(b, MNT_DTYPE_BF16, {7, 11}),
                   Upload(c, MNT_DTYPE_F16, {5})},
                  {out}).ok());
  double want = 0;
  for (const auto* v : {&a, &b, &c}) for (double e : *v) want += e * e;
  EXPECT_TRUE(AllCloseRelative(Download(out), {want}, 1e-6));
}

TEST_F(ReduceTest, NonfiniteCheckUnscale) {
  const double inf = std::numeric_limits<double>::infinity();
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    const std::vector<double> g1 = Stored(Random(50, -1000, 1000), dtype);
    const std::vector<double> g2 = Stored(Random(9, -1000, 1000), MNT_DTYPE_F32);
    MNT_Tensor inv = Upload({1.0 / 1024}, MNT_DTYPE_F32, {1});
    MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
    MNT_Tensor t1 = Upload(g1, dtype, {5, 10});
    MNT_Tensor t2 = Upload(g2, MNT_DTYPE_F32, {9});
    // out[1] aliases in[1]; out[2] aliases in[2]'s memory as bf16.
    MNT_Tensor t2_bf16 = sdk::MakeTensor(t2.data, MNT_DTYPE_BF16, {9});
    ASSERT_TRUE(Run(MNT_OP_NONFINITE_CHECK_UNSCALE, {inv, t1, t2},
                    {found, t1, t2_bf16}).ok());
    EXPECT_EQ(Download(found)[0], 0.0);  // left as it was
    std::vector<double> w1(g1), w2(g2);
    for (double& v : w1) v /= 1024;
    for (double& v : w2) v /= 1024;
    EXPECT_TRUE(AllCloseRelative(Download(t1), w1, DTypeTolerance(dtype), 1e-3));
    EXPECT_TRUE(AllCloseRelative(Download(t2_bf16), w2, 1e-2, 1e-3));

    for (double bad : {inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
      std::vector<double> g = g1;
      g[17] = bad;
      MNT_Tensor tb = Upload(g, dtype, {50});
      MNT_Tensor out = Empty(MNT_DTYPE_F32, {50});
      ASSERT_TRUE(Run(MNT_OP_NONFINITE_CHECK_UNSCALE, {inv, tb}, {found, out}).ok());
      EXPECT_EQ(Download(found)[0], 1.0) << bad;
    }
  }
  MNT_Tensor inv = Upload({1.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
  MNT_Tensor g = Upload(Random(4), MNT_DTYPE_F32, {4});
  EXPECT_EQ(Run(MNT_OP_NONFINITE_CHECK_UNSCALE, {inv, g}, {found}).message(),
            "NONFINITE_CHECK_UNSCALE: got 2 inputs and 1 outputs, expected as "
            "many outputs as inputs (found_inf + one per gradient)");
}

}  // namespace
}  // namespace mnt::cpu

// GEMM against a float64 reference: every storage dtype x compute mode x
// transpose combination, alpha/beta/bias, odd shapes.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllClose;
using testing::BackendFixture;

constexpr int64_t kM = 37, kK = 19, kN = 23;

struct GemmCase {
  MNT_DType dtype;
  MNT_ComputeMode compute;
  bool trans_a, trans_b, bias;
  float alpha, beta;
};

class GemmTest : public BackendFixture {
 protected:
  // Row-major element (i, j) of op(X) where X is stored as given.
  static double At(const std::vector<double>& x, bool trans, int64_t rows,
                   int64_t cols, int64_t i, int64_t j) {
    (void)rows;
    return trans ? x[j * rows + i] : x[i * cols + j];
  }

  // Runs one case; `round_operands` makes the reference round A/B/bias to the
  // compute format first (then the only error is fp32 accumulation).
  void Check(const GemmCase& c, bool round_operands = false) {
    SCOPED_TRACE(::testing::Message()
                 << "dtype " << sdk::DTypeName(c.dtype) << " compute "
                 << c.compute << " ta " << c.trans_a << " tb " << c.trans_b
                 << " bias " << c.bias << " alpha " << c.alpha << " beta " << c.beta);
    const std::vector<double> a = Stored(Random(kM * kK), c.dtype);
    const std::vector<double> b = Stored(Random(kK * kN), c.dtype);
    const std::vector<double> bias = Stored(Random(kN), c.dtype);
    const std::vector<double> c0 = Stored(Random(kM * kN), c.dtype);
    MNT_Tensor ta = c.trans_a ? Upload(a, c.dtype, {kK, kM}) : Upload(a, c.dtype, {kM, kK});
    MNT_Tensor tb = c.trans_b ? Upload(b, c.dtype, {kN, kK}) : Upload(b, c.dtype, {kK, kN});
    MNT_Tensor tbias = Upload(bias, c.dtype, {kN});
    // beta == 0 must not read C: start from NaN then.
    MNT_Tensor tc = c.beta != 0.0f ? Upload(c0, c.dtype, {kM, kN})
                                   : Empty(c.dtype, {kM, kN});
    MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, c.trans_a, c.trans_b,
                     c.alpha, c.beta, c.compute};
    std::vector<MNT_Tensor> in = {ta, tb};
    if (c.bias) in.push_back(tbias);
    const sdk::Status s = Run(MNT_OP_GEMM, in, {tc}, &p);
    ASSERT_TRUE(s.ok()) << s.message();

    auto op = [&](double v) {
      return round_operands
                 ? static_cast<double>(RoundToCompute(static_cast<float>(v), c.compute))
                 : v;
    };
    std::vector<double> want(kM * kN), scale(kM * kN);
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t k = 0; k < kK; ++k) {
          const double av = op(c.trans_a ? a[k * kM + i] : a[i * kK + k]);
          const double bv = op(c.trans_b ? b[j * kK + k] : b[k * kN + j]);
          sum += av * bv;
          abs_sum += std::fabs(av * bv);
        }
        double v = c.alpha * sum, sc = std::fabs(c.alpha) * abs_sum;
        if (c.beta != 0.0f) {
          v += c.beta * c0[i * kN + j];
          sc += std::fabs(c.beta * c0[i * kN + j]);
        }
        if (c.bias) {
          v += op(bias[j]);
          sc += std::fabs(bias[j]);
        }
        want[i * kN + j] = v;
        scale[i * kN + j] = sc + 1e-30;
      }
    }
    const double tol =
        round_operands ? testing::DTypeTolerance(c.dtype)
                       : std::max(testing::ComputeTolerance(c.compute),
                                  testing::DTypeTolerance(c.dtype));
    EXPECT_TRUE(AllClose(Download(tc), want, scale, tol));
  }
};

TEST_F(GemmTest, AllDTypesComputeModesAndTransposes) {
  for (MNT_DType dtype : testing::FloatDTypes()) {
    for (MNT_ComputeMode compute : {MNT_COMPUTE_F32, MNT_COMPUTE_TF32,
                                    MNT_COMPUTE_BF16, MNT_COMPUTE_F16}) {
      for (int t = 0; t < 4; ++t) {
        Check({dtype, compute, (t & 1) != 0, (t & 2) != 0, t == 3, 0.75f,
               t == 2 ? 0.0f : 0.5f});
      }
    }
  }
}

TEST_F(GemmTest, PlainProductAndBiasOnly) {
  Check({MNT_DTYPE_F32, MNT_COMPUTE_F32, false, false, false, 1.0f, 0.0f});
  Check({MNT_DTYPE_F32, MNT_COMPUTE_F32, false, false, true, 1.0f, 1.0f});
  Check({MNT_DTYPE_BF16, MNT_COMPUTE_BF16, true, true, true, -2.0f, 1.0f});
}

// With fp32 storage the compute mode must really round the operands: the
// result matches a reference on rounded operands to fp32 accuracy and differs
// from the exact product by far more than that.
TEST_F(GemmTest, ComputeModeRoundsOperands) {
  for (MNT_ComputeMode compute :
       {MNT_COMPUTE_TF32, MNT_COMPUTE_BF16, MNT_COMPUTE_F16}) {
    Check({MNT_DTYPE_F32, compute, false, true, true, 1.0f, 0.0f},
          /*round_operands=*/true);
  }
  // Exact-vs-rounded gap, measured on one product.
  const std::vector<double> a = Stored(Random(kM * kK), MNT_DTYPE_F32);
  const std::vector<double> b = Stored(Random(kK * kN), MNT_DTYPE_F32);
  MNT_Tensor ta = Upload(a, MNT_DTYPE_F32, {kM, kK});
  MNT_Tensor tb = Upload(b, MNT_DTYPE_F32, {kK, kN});
  MNT_Tensor exact = Empty(MNT_DTYPE_F32, {kM, kN});
  MNT_Tensor rounded = Empty(MNT_DTYPE_F32, {kM, kN});
  MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
  ASSERT_TRUE(Run(MNT_OP_GEMM, {ta, tb}, {exact}, &p).ok());
  p.compute = MNT_COMPUTE_BF16;
  ASSERT_TRUE(Run(MNT_OP_GEMM, {ta, tb}, {rounded}, &p).ok());
  const std::vector<double> e = Download(exact), r = Download(rounded);
  double max_gap = 0.0;
  for (size_t i = 0; i < e.size(); ++i) max_gap = std::max(max_gap, std::fabs(e[i] - r[i]));
  EXPECT_GT(max_gap, 1e-4);
}

TEST_F(GemmTest, EmptyInnerDimensionGivesBetaC) {
  const std::vector<double> c0 = Stored(Random(3 * 2), MNT_DTYPE_F32);
  MNT_Tensor a = Empty(MNT_DTYPE_F32, {3, 0});
  a.data = Upload({1.0}, MNT_DTYPE_F32, {1}).data;  // non-NULL, 0 bytes used
  MNT_Tensor b = a;
  b.dims[0] = 0;
  b.dims[1] = 2;
  MNT_Tensor c = Upload(c0, MNT_DTYPE_F32, {3, 2});
  MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 2.0f, MNT_COMPUTE_F32};
  ASSERT_TRUE(Run(MNT_OP_GEMM, {a, b}, {c}, &p).ok());
  std::vector<double> want(c0);
  for (double& v : want) v *= 2.0;
  EXPECT_TRUE(testing::AllCloseRelative(Download(c), want, 1e-6));
}

TEST_F(GemmTest, ShapeErrorsNameTheOperand) {
  MNT_Tensor a = Upload(Random(4 * 3), MNT_DTYPE_F32, {4, 3});
  MNT_Tensor b = Upload(Random(3 * 5), MNT_DTYPE_F32, {3, 5});
  MNT_Tensor bias = Upload(Random(4), MNT_DTYPE_F32, {4});
  MNT_Tensor c = Empty(MNT_DTYPE_F32, {4, 4});
  MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
  EXPECT_EQ(Run(MNT_OP_GEMM, {a, b}, {c}, &p).message(),
            "GEMM: out[0] C is f32[4,4], expected [M=4, N=5]");
  p.trans_b = 1;
  EXPECT_EQ(Run(MNT_OP_GEMM, {a, b}, {c}, &p).message(),
            "GEMM: in[1] B is f32[3,5], expected [N, K=3]");
  p.trans_b = 0;
  MNT_Tensor c45 = Empty(MNT_DTYPE_F32, {4, 5});
  EXPECT_EQ(Run(MNT_OP_GEMM, {a, b, bias}, {c45}, &p).message(),
            "GEMM: in[2] bias is f32[4], expected [N=5]");
  p.compute = static_cast<MNT_ComputeMode>(9);
  EXPECT_EQ(Run(MNT_OP_GEMM, {a, b}, {c45}, &p).message(),
            "GEMM: unknown compute mode 9");
}

}  // namespace
}  // namespace mnt::cpu

// The fused-epilogue GEMMs (GEMM_BIAS_GELU, GEMM_DGELU, GEMM_BIAS_GRAD)
// against a float64 reference on fresh random inputs, every storage dtype
// with its compute mode and every transpose combination; the bias gradient
// overwritten and accumulated; the contract checks' messages.
// Tolerances (relative to the sum of |terms| of each output element): the
// larger of the compute mode's (fp32 1e-5, tf32 1e-3, bf16/fp16 1e-2) and
// the storage dtype's (fp32 1e-5, 16-bit 1e-2), as GEMM's own test.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllClose;
using testing::BackendFixture;

constexpr int64_t kM = 29, kK = 17, kN = 21;
constexpr double kSqrt2OverPi = 0.7978845608028654;

double Gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}
double GeluDerivative(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
}

// |first term| + |second term| of GeluDerivative: near gelu's minimum
// (x ~ -0.75) the two cancel, and fp32 evaluation errs relative to their
// size, not to the (tiny) derivative.
double GeluDerivativeScale(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return std::fabs(0.5 * (1.0 + t)) +
         std::fabs(0.5 * x * (1.0 - t * t) * kSqrt2OverPi *
                   (1.0 + 3.0 * 0.044715 * x * x));
}

struct Precision {
  MNT_DType dtype;
  MNT_ComputeMode compute;
};
const Precision kPrecisions[] = {{MNT_DTYPE_F32, MNT_COMPUTE_F32},
                                 {MNT_DTYPE_F32, MNT_COMPUTE_TF32},
                                 {MNT_DTYPE_BF16, MNT_COMPUTE_BF16},
                                 {MNT_DTYPE_F16, MNT_COMPUTE_F16}};

double Tolerance(const Precision& p) {
  return std::max(testing::ComputeTolerance(p.compute),
                  testing::DTypeTolerance(p.dtype));
}

class GemmEpilogueTest : public BackendFixture {
 protected:
  // Random A, B stored in `dtype` for op(A) [M,K], op(B) [K,N]; the float64
  // product alpha * op(A) op(B) and, per element, alpha * sum |a b|.
  struct Product {
    std::vector<double> a, b, value, scale;
    MNT_Tensor ta, tb;
  };
  Product MakeProduct(const Precision& p, bool trans_a, bool trans_b,
                      float alpha) {
    Product r;
    r.a = Stored(Random(kM * kK), p.dtype);
    r.b = Stored(Random(kK * kN), p.dtype);
    r.ta = trans_a ? Upload(r.a, p.dtype, {kK, kM}) : Upload(r.a, p.dtype, {kM, kK});
    r.tb = trans_b ? Upload(r.b, p.dtype, {kN, kK}) : Upload(r.b, p.dtype, {kK, kN});
    r.value.assign(kM * kN, 0.0);
    r.scale.assign(kM * kN, 0.0);
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t k = 0; k < kK; ++k) {
          const double av = trans_a ? r.a[k * kM + i] : r.a[i * kK + k];
          const double bv = trans_b ? r.b[j * kK + k] : r.b[k * kN + j];
          sum += av * bv;
          abs_sum += std::fabs(av * bv);
        }
        r.value[i * kN + j] = alpha * sum;
        r.scale[i * kN + j] = std::fabs(alpha) * abs_sum + 1e-30;
      }
    }
    return r;
  }
};

TEST_F(GemmEpilogueTest, BiasGeluMatchesFloat64) {
  for (const Precision& p : kPrecisions) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(p.dtype) << " compute "
                                        << p.compute << " ta " << ta << " tb " << tb);
      const float alpha = t == 3 ? -1.5f : 1.0f;
      Product prod = MakeProduct(p, ta, tb, alpha);
      const std::vector<double> bias = Stored(Random(kN), p.dtype);
      MNT_Tensor tbias = Upload(bias, p.dtype, {kN});
      MNT_Tensor y = Empty(p.dtype, {kM, kN}), pre = Empty(p.dtype, {kM, kN});
      MNT_GemmParams params{MNT_GemmParams_STRUCT_SIZE, ta, tb, alpha, 0.0f, p.compute};
      const sdk::Status s =
          Run(MNT_OP_GEMM_BIAS_GELU, {prod.ta, prod.tb, tbias}, {y, pre}, &params);
      ASSERT_TRUE(s.ok()) << s.message();
      std::vector<double> want_pre(kM * kN), want_y(kM * kN), scale(kM * kN);
      for (int64_t i = 0; i < kM * kN; ++i) {
        want_pre[i] = prod.value[i] + bias[i % kN];
        want_y[i] = Gelu(want_pre[i]);
        scale[i] = prod.scale[i] + std::fabs(bias[i % kN]);
      }
      EXPECT_TRUE(AllClose(Download(pre), want_pre, scale, Tolerance(p)));
      // |gelu'| < 1.13: the pre-activation's error scaled by at most that.
      for (double& v : scale) v *= 1.13;
      EXPECT_TRUE(AllClose(Download(y), want_y, scale, Tolerance(p)));
    }
  }
}

TEST_F(GemmEpilogueTest, DgeluWithBiasGradientMatchesFloat64) {
  for (const Precision& p : kPrecisions) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      const bool with_dbias = t != 1, accumulate = t >= 2;
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(p.dtype) << " compute "
                                        << p.compute << " ta " << ta << " tb " << tb
                                        << " accumulate " << accumulate);
      const float alpha = t == 2 ? 0.5f : 1.0f;
      Product prod = MakeProduct(p, ta, tb, alpha);
      const std::vector<double> pre = Stored(Random(kM * kN, -3.0, 3.0), p.dtype);
      const std::vector<double> db0 = Stored(Random(kN), p.dtype);
      MNT_Tensor tpre = Upload(pre, p.dtype, {kM, kN});
      MNT_Tensor dpre = Empty(p.dtype, {kM, kN});
      MNT_Tensor dbias = accumulate ? Upload(db0, p.dtype, {kN}) : Empty(p.dtype, {kN});
      MNT_GemmEpilogueParams params{MNT_GemmEpilogueParams_STRUCT_SIZE, ta, tb, alpha,
                                    0.0f, p.compute, accumulate ? 1 : 0};
      std::vector<MNT_Tensor> out = {dpre};
      if (with_dbias) out.push_back(dbias);
      const sdk::Status s =
          Run(MNT_OP_GEMM_DGELU, {prod.ta, prod.tb, tpre}, out, &params);
      ASSERT_TRUE(s.ok()) << s.message();
      std::vector<double> want(kM * kN), scale(kM * kN);
      std::vector<double> want_db(kN, 0.0), scale_db(kN, 1e-30);
      for (int64_t i = 0; i < kM * kN; ++i) {
        const double d = GeluDerivative(pre[i]);
        want[i] = prod.value[i] * d;
        scale[i] = prod.scale[i] * GeluDerivativeScale(pre[i]) + 1e-30;
        want_db[i % kN] += want[i];
        scale_db[i % kN] += scale[i];
      }
      EXPECT_TRUE(AllClose(Download(dpre), want, scale, Tolerance(p)));
      if (!with_dbias) continue;
      for (int64_t j = 0; j < kN; ++j) {
        if (accumulate) {
          want_db[j] += db0[j];
          scale_db[j] += std::fabs(db0[j]);
        }
      }
      EXPECT_TRUE(AllClose(Download(dbias), want_db, scale_db, Tolerance(p)));
    }
  }
}

TEST_F(GemmEpilogueTest, BiasGradMatchesFloat64) {
  for (const Precision& p : kPrecisions) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      const bool accumulate = t >= 2;
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(p.dtype) << " compute "
                                        << p.compute << " ta " << ta << " tb " << tb
                                        << " accumulate " << accumulate);
      const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
      Product prod = MakeProduct(p, ta, tb, alpha);
      const std::vector<double> c0 = Stored(Random(kM * kN), p.dtype);
      const std::vector<double> db0 = Stored(Random(kM), p.dtype);
      MNT_Tensor c = accumulate ? Upload(c0, p.dtype, {kM, kN}) : Empty(p.dtype, {kM, kN});
      MNT_Tensor dbias = accumulate ? Upload(db0, p.dtype, {kM}) : Empty(p.dtype, {kM});
      MNT_GemmEpilogueParams params{MNT_GemmEpilogueParams_STRUCT_SIZE, ta, tb, alpha,
                                    beta, p.compute, accumulate ? 1 : 0};
      const sdk::Status s = Run(MNT_OP_GEMM_BIAS_GRAD, {prod.ta, prod.tb}, {c, dbias}, &params);
      ASSERT_TRUE(s.ok()) << s.message();
      std::vector<double> want(prod.value), scale(prod.scale);
      for (int64_t i = 0; i < kM * kN; ++i) {
        want[i] += beta * c0[i];
        scale[i] += std::fabs(beta * c0[i]);
      }
      EXPECT_TRUE(AllClose(Download(c), want, scale, Tolerance(p)));
      // dbias[m] = sum over k of op(A)[m, k], from A as stored (no compute
      // rounding: BIAS_GRAD's operand is the stored dY).
      std::vector<double> want_db(kM, 0.0), scale_db(kM, 1e-30);
      for (int64_t i = 0; i < kM; ++i) {
        for (int64_t k = 0; k < kK; ++k) {
          const double av = ta ? prod.a[k * kM + i] : prod.a[i * kK + k];
          want_db[i] += av;
          scale_db[i] += std::fabs(av);
        }
        if (accumulate) {
          want_db[i] += db0[i];
          scale_db[i] += std::fabs(db0[i]);
        }
      }
      EXPECT_TRUE(AllClose(Download(dbias), want_db, scale_db,
                           testing::DTypeTolerance(p.dtype)));
    }
  }
}

TEST_F(GemmEpilogueTest, ContractErrorsNameTheOperand) {
  MNT_Tensor a = Upload(Random(4 * 3), MNT_DTYPE_F32, {4, 3});
  MNT_Tensor b = Upload(Random(3 * 5), MNT_DTYPE_F32, {3, 5});
  MNT_Tensor bias5 = Upload(Random(5), MNT_DTYPE_F32, {5});
  MNT_Tensor bias4 = Upload(Random(4), MNT_DTYPE_F32, {4});
  MNT_Tensor y = Empty(MNT_DTYPE_F32, {4, 5}), pre = Empty(MNT_DTYPE_F32, {4, 5});
  MNT_Tensor pre_bad = Empty(MNT_DTYPE_F32, {5, 4});
  MNT_GemmParams gp{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
  EXPECT_EQ(Run(MNT_OP_GEMM_BIAS_GELU, {a, b, bias4}, {y, pre}, &gp).message(),
            "GEMM_BIAS_GELU: in[2] bias is f32[4], expected [N=5]");
  EXPECT_EQ(Run(MNT_OP_GEMM_BIAS_GELU, {a, b}, {y, pre}, &gp).message(),
            "GEMM_BIAS_GELU: got 2 inputs, expected 3");
  EXPECT_NE(Run(MNT_OP_GEMM_BIAS_GELU, {a, b, bias5}, {y, pre_bad}, &gp)
                .message()
                .find("GEMM_BIAS_GELU: out[1] pre is f32[5,4]"),
            std::string::npos);
  gp.beta = 1.0f;
  EXPECT_EQ(Run(MNT_OP_GEMM_BIAS_GELU, {a, b, bias5}, {y, pre}, &gp).message(),
            "GEMM_BIAS_GELU: beta is 1; this op overwrites its outputs (beta must be 0)");

  MNT_GemmEpilogueParams ep{MNT_GemmEpilogueParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f,
                            MNT_COMPUTE_F32, 0};
  EXPECT_EQ(Run(MNT_OP_GEMM_DGELU, {a, b, pre}, {pre}, &ep).message(),
            "GEMM_DGELU: out[0] dpre aliases in[2] pre (the epilogue reads pre "
            "while writing dpre)");
  EXPECT_EQ(Run(MNT_OP_GEMM_DGELU, {a, b, pre}, {y, bias4}, &ep).message(),
            "GEMM_DGELU: out[1] dbias is f32[4], expected [N=5]");
  EXPECT_EQ(Run(MNT_OP_GEMM_DGELU, {a, b, pre}, {y}, &gp).message(),
            "GEMM_DGELU: MNT_GemmEpilogueParams.struct_size 28 is smaller than 32");
  EXPECT_EQ(Run(MNT_OP_GEMM_BIAS_GRAD, {a, b}, {y, bias5}, &ep).message(),
            "GEMM_BIAS_GRAD: out[1] dbias is f32[5], expected [M=4]");
  ep.compute = static_cast<MNT_ComputeMode>(9);
  EXPECT_EQ(Run(MNT_OP_GEMM_BIAS_GRAD, {a, b}, {y, bias4}, &ep).message(),
            "GEMM_BIAS_GRAD: unknown compute mode 9");
}

}  // namespace
}  // namespace mnt::cpu

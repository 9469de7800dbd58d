// FILL, CAST, ADD and activations against float64 references in every dtype.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;
using testing::DTypeTolerance;
using testing::FloatDTypes;

class ElementwiseTest : public BackendFixture {};

double Gelu(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double GeluGrad(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  const double t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * x * x);
}

TEST_F(ElementwiseTest, FillEveryDType) {
  for (MNT_DType dtype : FloatDTypes()) {
    MNT_Tensor t = Empty(dtype, {5, 7});
    MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, -3.25};
    ASSERT_TRUE(Run(MNT_OP_FILL, {}, {t}, &p).ok());
    EXPECT_EQ(Download(t), std::vector<double>(35, -3.25));
  }
  MNT_Tensor ids = Empty(MNT_DTYPE_I32, {4});
  MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, 7};
  ASSERT_TRUE(Run(MNT_OP_FILL, {}, {ids}, &p).ok());
  EXPECT_EQ(Download(ids), std::vector<double>(4, 7));
  p.value = 0.5;
  EXPECT_EQ(Run(MNT_OP_FILL, {}, {ids}, &p).message(),
            "FILL: value 0.5 does not fit out[0] out exactly");
}

TEST_F(ElementwiseTest, CastBetweenAllDTypesRoundsOnce) {
  for (MNT_DType from : FloatDTypes()) {
    for (MNT_DType to : FloatDTypes()) {
      const std::vector<double> x = Stored(Random(61, -100, 100), from);
      MNT_Tensor in = Upload(x, from, {61});
      MNT_Tensor out = Empty(to, {61});
      ASSERT_TRUE(Run(MNT_OP_CAST, {in}, {out}).ok());
      // Exactly the storage rounding of the (exact) input value.
      EXPECT_EQ(Download(out), Stored(x, to))
          << sdk::DTypeName(from) << "->" << sdk::DTypeName(to);
    }
  }
  MNT_Tensor a = Upload(Random(6), MNT_DTYPE_F32, {6});
  MNT_Tensor b = Empty(MNT_DTYPE_F16, {5});
  EXPECT_EQ(Run(MNT_OP_CAST, {a}, {b}).message(),
            "CAST: out[0] y is f16[5], expected 6 elements like in[0]");
}

TEST_F(ElementwiseTest, AddWithAlphaBetaAndAliasing) {
  for (MNT_DType dtype : FloatDTypes()) {
    const std::vector<double> a = Stored(Random(37 * 3), dtype);
    const std::vector<double> b = Stored(Random(37 * 3), MNT_DTYPE_F32);
    MNT_Tensor ta = Upload(a, dtype, {37, 3});
    MNT_Tensor tb = Upload(b, MNT_DTYPE_F32, {111});  // mixed dtype, other shape
    MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, 0.5f, -2.0f};
    // out aliases in[0].
    ASSERT_TRUE(Run(MNT_OP_ADD, {ta, tb}, {ta}, &p).ok());
    std::vector<double> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) want[i] = 0.5 * a[i] - 2.0 * b[i];
    EXPECT_TRUE(AllCloseRelative(Download(ta), want, DTypeTolerance(dtype)));
    // Single input: a scale.
    MNT_Tensor out = Empty(MNT_DTYPE_F32, {111});
    ASSERT_TRUE(Run(MNT_OP_ADD, {tb}, {out}, &p).ok());
    for (size_t i = 0; i < b.size(); ++i) want[i] = 0.5 * b[i];
    EXPECT_TRUE(AllCloseRelative(Download(out), want, 1e-6));
  }
}

TEST_F(ElementwiseTest, ActivationsForwardAndBackward) {
  for (MNT_Activation act : {MNT_ACTIVATION_IDENTITY, MNT_ACTIVATION_RELU,
                             MNT_ACTIVATION_GELU_TANH}) {
    for (MNT_DType dtype : FloatDTypes()) {
      SCOPED_TRACE(::testing::Message() << "act " << act << " " << sdk::DTypeName(dtype));
      const std::vector<double> x = Stored(Random(203, -4, 4), dtype);
      const std::vector<double> dy = Stored(Random(203), dtype);
      MNT_Tensor tx = Upload(x, dtype, {7, 29});
      MNT_Tensor tdy = Upload(dy, dtype, {7, 29});
      MNT_Tensor ty = Empty(dtype, {7, 29});
      MNT_ActivationParams p{MNT_ActivationParams_STRUCT_SIZE, act};
      ASSERT_TRUE(Run(MNT_OP_ACTIVATION_FORWARD, {tx}, {ty}, &p).ok());
      // Backward writes into dy's memory (allowed alias).
      ASSERT_TRUE(Run(MNT_OP_ACTIVATION_BACKWARD, {tx, tdy}, {tdy}, &p).ok());
      std::vector<double> y(x.size()), dx(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        switch (act) {
          case MNT_ACTIVATION_RELU:
            y[i] = x[i] > 0 ? x[i] : 0;
            dx[i] = x[i] > 0 ? dy[i] : 0;
            break;
          case MNT_ACTIVATION_GELU_TANH:
            y[i] = Gelu(x[i]);
            dx[i] = GeluGrad(x[i]) * dy[i];
            break;
          default:
            y[i] = x[i];
            dx[i] = dy[i];
        }
      }
      EXPECT_TRUE(AllCloseRelative(Download(ty), y, DTypeTolerance(dtype)));
      EXPECT_TRUE(AllCloseRelative(Download(tdy), dx, DTypeTolerance(dtype)));
    }
  }
  MNT_Tensor x = Upload(Random(3), MNT_DTYPE_F32, {3});
  MNT_ActivationParams bad{MNT_ActivationParams_STRUCT_SIZE,
                           static_cast<MNT_Activation>(42)};
  EXPECT_EQ(Run(MNT_OP_ACTIVATION_FORWARD, {x}, {x}, &bad).message(),
            "ACTIVATION_FORWARD: unknown activation 42");
}

// The vectorised GELU (gelu_vector.h) across its whole range, densely:
// within 1e-5 relative of float64 (backward: of the sum of its two terms'
// magnitudes), where the result underflows within 1e-30; NaN stays NaN.
TEST_F(ElementwiseTest, GeluTanhMatchesFloat64DenselyAndKeepsNaN) {
  std::vector<double> x;
  for (int i = -12 * 1024; i <= 12 * 1024; ++i) x.push_back(i / 1024.0 + 1.0 / 4096);
  const int64_t n = static_cast<int64_t>(x.size());
  MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {n});
  MNT_Tensor tdy = Upload(std::vector<double>(x.size(), 1.0), MNT_DTYPE_F32, {n});
  MNT_Tensor ty = Empty(MNT_DTYPE_F32, {n});
  MNT_Tensor tdx = Empty(MNT_DTYPE_F32, {n});
  MNT_ActivationParams p{MNT_ActivationParams_STRUCT_SIZE, MNT_ACTIVATION_GELU_TANH};
  ASSERT_TRUE(Run(MNT_OP_ACTIVATION_FORWARD, {tx}, {ty}, &p).ok());
  ASSERT_TRUE(Run(MNT_OP_ACTIVATION_BACKWARD, {tx, tdy}, {tdx}, &p).ok());
  const std::vector<double> y = Download(ty), dx = Download(tdx);
  // float64 through 0.5 (1 + tanh u) = 1 / (1 + exp(-2u)): Gelu() above
  // cancels to 0 below x = -9.4, where the true value is still ~1e-32.
  const double k = std::sqrt(2.0 / M_PI);
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 5; ++i) {
    const double u = k * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
    const double e = std::exp(-2.0 * u), s = 1.0 / (1.0 + e);
    const double du = k * (1.0 + 3 * 0.044715 * x[i] * x[i]);
    const double want_y = x[i] * s, want_dx = s + 2.0 * x[i] * s * (e * s) * du;
    const double grad_scale = s + std::fabs(2.0 * x[i] * s * (e * s) * du);
    const bool ok_y = std::fabs(y[i] - want_y) <= 1e-5 * std::fabs(want_y) + 1e-30;
    const bool ok_dx = std::fabs(dx[i] - want_dx) <= 1e-5 * grad_scale + 1e-30;
    if (!ok_y || !ok_dx) {
      ++bad;
      ADD_FAILURE() << "x=" << x[i] << " y=" << y[i] << " want " << want_y << " dx=" << dx[i]
                    << " want " << want_dx;
    }
  }
  MNT_Tensor tnan = Upload({std::nan(""), 1.0}, MNT_DTYPE_F32, {2});
  MNT_Tensor tdnan = Upload({1.0, std::nan("")}, MNT_DTYPE_F32, {2});
  MNT_Tensor ynan = Empty(MNT_DTYPE_F32, {2}), dxnan = Empty(MNT_DTYPE_F32, {2});
  ASSERT_TRUE(Run(MNT_OP_ACTIVATION_FORWARD, {tnan}, {ynan}, &p).ok());
  EXPECT_TRUE(std::isnan(Download(ynan)[0]));
  ASSERT_TRUE(Run(MNT_OP_ACTIVATION_BACKWARD, {tnan, tdnan}, {dxnan}, &p).ok());
  const std::vector<double> dnan = Download(dxnan);
  EXPECT_TRUE(std::isnan(dnan[0]) && std::isnan(dnan[1]));
}

}  // namespace
}  // namespace mnt::cpu

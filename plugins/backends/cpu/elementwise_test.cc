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

}  // namespace
}  // namespace mnt::cpu

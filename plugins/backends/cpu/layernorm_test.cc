// LAYERNORM_FORWARD/BACKWARD against float64, the backward also against
// finite differences of a float64 scalar loss.
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

constexpr int64_t kN = 7, kC = 33;
constexpr float kEps = 1e-5f;

void Forward(const std::vector<double>& x, const std::vector<double>& w,
             const std::vector<double>& b, std::vector<double>* y,
             std::vector<double>* mean, std::vector<double>* rstd) {
  y->assign(kN * kC, 0);
  mean->assign(kN, 0);
  rstd->assign(kN, 0);
  for (int64_t r = 0; r < kN; ++r) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < kC; ++j) mu += x[r * kC + j];
    mu /= kC;
    for (int64_t j = 0; j < kC; ++j) var += (x[r * kC + j] - mu) * (x[r * kC + j] - mu);
    const double rs = 1.0 / std::sqrt(var / kC + kEps);
    for (int64_t j = 0; j < kC; ++j) (*y)[r * kC + j] = (x[r * kC + j] - mu) * rs * w[j] + b[j];
    (*mean)[r] = mu;
    (*rstd)[r] = rs;
  }
}

// Scalar loss sum(y * g) whose gradients are what backward computes for dy = g.
double Loss(const std::vector<double>& x, const std::vector<double>& w,
            const std::vector<double>& b, const std::vector<double>& g) {
  std::vector<double> y, m, r;
  Forward(x, w, b, &y, &m, &r);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * g[i];
  return s;
}

class LayerNormTest : public BackendFixture {};

TEST_F(LayerNormTest, ForwardAndBackward) {
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    std::vector<double> x = Stored(Random(kN * kC, -2, 3), dtype);
    std::vector<double> w = Stored(Random(kC, 0.5, 1.5), dtype);
    std::vector<double> b = Stored(Random(kC), dtype);
    const std::vector<double> g = Stored(Random(kN * kC), dtype);
    const std::vector<double> dw0 = Stored(Random(kC), dtype);
    const std::vector<double> db0 = Stored(Random(kC), dtype);
    MNT_Tensor tx = Upload(x, dtype, {kN, kC}), tw = Upload(w, dtype, {kC}),
               tb = Upload(b, dtype, {kC}), tg = Upload(g, dtype, {kN, kC});
    MNT_Tensor ty = Empty(dtype, {kN, kC});
    MNT_Tensor tmean = Empty(MNT_DTYPE_F32, {kN}), trstd = Empty(MNT_DTYPE_F32, {kN});
    MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, kEps, 1};
    ASSERT_TRUE(Run(MNT_OP_LAYERNORM_FORWARD, {tx, tw, tb}, {ty, tmean, trstd}, &p).ok());
    std::vector<double> y, mean, rstd;
    Forward(x, w, b, &y, &mean, &rstd);
    const double tol = DTypeTolerance(dtype);
    EXPECT_TRUE(AllCloseRelative(Download(ty), y, tol));
    EXPECT_TRUE(AllCloseRelative(Download(tmean), mean, 1e-5));
    EXPECT_TRUE(AllCloseRelative(Download(trstd), rstd, 1e-5));

    MNT_Tensor tdx = Empty(dtype, {kN, kC});
    MNT_Tensor tdw = Upload(dw0, dtype, {kC}), tdb = Upload(db0, dtype, {kC});
    const sdk::Status s = Run(MNT_OP_LAYERNORM_BACKWARD, {tg, tx, tw, tmean, trstd},
                              {tdx, tdw, tdb}, &p);
    ASSERT_TRUE(s.ok()) << s.message();
    // Finite differences of the float64 loss for every x, w, b.
    const double h = 1e-6;
    std::vector<double> dx(kN * kC), dw(kC), db(kC);
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      x[i] = v + h; const double up = Loss(x, w, b, g);
      x[i] = v - h; const double down = Loss(x, w, b, g);
      x[i] = v;
      dx[i] = (up - down) / (2 * h);
    }
    for (int64_t j = 0; j < kC; ++j) {
      double v = w[j];
      w[j] = v + h; double up = Loss(x, w, b, g);
      w[j] = v - h; double down = Loss(x, w, b, g);
      w[j] = v;
      dw[j] = dw0[j] + (up - down) / (2 * h);  // accumulate = 1
      db[j] = db0[j];
      for (int64_t r = 0; r < kN; ++r) db[j] += g[r * kC + j];
    }
    const double fd_tol = std::max(tol, 1e-4);
    EXPECT_TRUE(AllCloseRelative(Download(tdx), dx, fd_tol));
    EXPECT_TRUE(AllCloseRelative(Download(tdw), dw, fd_tol));
    EXPECT_TRUE(AllCloseRelative(Download(tdb), db, tol));

    // accumulate = 0 overwrites.
    p.accumulate = 0;
    ASSERT_TRUE(Run(MNT_OP_LAYERNORM_BACKWARD, {tg, tx, tw, tmean, trstd},
                    {tdx, tdw, tdb}, &p).ok());
    for (int64_t j = 0; j < kC; ++j) db[j] -= db0[j];
    EXPECT_TRUE(AllCloseRelative(Download(tdb), db, tol));
  }
}

TEST_F(LayerNormTest, ShapeErrors) {
  MNT_Tensor x = Upload(Random(kN * kC), MNT_DTYPE_F32, {kN, kC});
  MNT_Tensor w = Upload(Random(kC + 1), MNT_DTYPE_F32, {kC + 1});
  MNT_Tensor m = Empty(MNT_DTYPE_F32, {kN});
  MNT_Tensor m16 = Empty(MNT_DTYPE_BF16, {kN});
  MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, kEps, 0};
  EXPECT_EQ(Run(MNT_OP_LAYERNORM_FORWARD, {x, w, w}, {x, m, m}, &p).message(),
            "LAYERNORM_FORWARD: in[1] weight is f32[34], expected [C=33]");
  MNT_Tensor w33 = Upload(Random(kC), MNT_DTYPE_F32, {kC});
  EXPECT_EQ(Run(MNT_OP_LAYERNORM_FORWARD, {x, w33, w33}, {x, m16, m}, &p).message(),
            "LAYERNORM_FORWARD: out[1] mean is bf16[7], expected dtype f32");
}

}  // namespace
}  // namespace mnt::cpu

// RESIDUAL_LAYERNORM_FORWARD/BACKWARD (ABI 1.6) against a float64 reference
// (the layer norm of the stored sum, its analytic gradient plus the incoming
// residual gradient), and against the separate ADD / LAYERNORM ops they
// replace. Tolerances: fp32 1e-5, f16/bf16 1e-2 relative (floor 1).
#include <cmath>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;
using testing::DTypeTolerance;
using testing::FloatDTypes;

// C > 64 so the dweight/dbias column stripes split.
constexpr int64_t kN = 9, kC = 80;
constexpr float kEps = 1e-5f;

struct Reference {
  std::vector<double> y, mean, rstd, dx, dw, db;
};

// Layer norm of s [kN, kC] in float64 and its backward for dy, plus dsum.
Reference Compute(const std::vector<double>& s, const std::vector<double>& w,
                  const std::vector<double>& b, const std::vector<double>& dy,
                  const std::vector<double>& dsum) {
  Reference ref;
  ref.y.assign(kN * kC, 0);
  ref.dx = dsum;
  ref.dw.assign(kC, 0);
  ref.db.assign(kC, 0);
  for (int64_t r = 0; r < kN; ++r) {
    const double* row = s.data() + r * kC;
    double mu = 0, var = 0;
    for (int64_t j = 0; j < kC; ++j) mu += row[j];
    mu /= kC;
    for (int64_t j = 0; j < kC; ++j) var += (row[j] - mu) * (row[j] - mu);
    const double rs = 1.0 / std::sqrt(var / kC + kEps);
    ref.mean.push_back(mu);
    ref.rstd.push_back(rs);
    double mean_dxhat = 0, mean_dxhat_xhat = 0;
    for (int64_t j = 0; j < kC; ++j) {
      const double xhat = (row[j] - mu) * rs, g = dy[r * kC + j];
      ref.y[r * kC + j] = xhat * w[j] + b[j];
      mean_dxhat += g * w[j] / kC;
      mean_dxhat_xhat += g * w[j] * xhat / kC;
      ref.dw[j] += g * xhat;
      ref.db[j] += g;
    }
    for (int64_t j = 0; j < kC; ++j) {
      const double xhat = (row[j] - mu) * rs;
      ref.dx[r * kC + j] +=
          rs * (dy[r * kC + j] * w[j] - mean_dxhat - xhat * mean_dxhat_xhat);
    }
  }
  return ref;
}

class ResidualLayerNormTest : public BackendFixture {};

TEST_F(ResidualLayerNormTest, MatchesFloat64Reference) {
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    const std::vector<double> x = Stored(Random(kN * kC, -2, 3), dtype);
    const std::vector<double> r = Stored(Random(kN * kC), dtype);
    const std::vector<double> w = Stored(Random(kC, 0.5, 1.5), dtype);
    const std::vector<double> b = Stored(Random(kC), dtype);
    const std::vector<double> dy = Stored(Random(kN * kC), dtype);
    const std::vector<double> dsum = Stored(Random(kN * kC), dtype);
    std::vector<double> sum(kN * kC);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = x[i] + r[i];
    const std::vector<double> stored_sum = Stored(sum, dtype);
    const Reference ref = Compute(stored_sum, w, b, dy, dsum);
    const double tol = DTypeTolerance(dtype);

    MNT_Tensor tx = Upload(x, dtype, {kN, kC}), tr = Upload(r, dtype, {kN, kC});
    MNT_Tensor tw = Upload(w, dtype, {kC}), tb = Upload(b, dtype, {kC});
    MNT_Tensor tsum = Empty(dtype, {kN, kC}), ty = Empty(dtype, {kN, kC});
    MNT_Tensor tmean = Empty(MNT_DTYPE_F32, {kN}), trstd = Empty(MNT_DTYPE_F32, {kN});
    MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, kEps, 0};
    sdk::Status s = Run(MNT_OP_RESIDUAL_LAYERNORM_FORWARD, {tx, tr, tw, tb},
                        {tsum, ty, tmean, trstd}, &p);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(AllCloseRelative(Download(tsum), stored_sum, tol));
    EXPECT_TRUE(AllCloseRelative(Download(ty), ref.y, tol));
    EXPECT_TRUE(AllCloseRelative(Download(tmean), ref.mean, 1e-5));
    EXPECT_TRUE(AllCloseRelative(Download(trstd), ref.rstd, 1e-5));

    MNT_Tensor tdy = Upload(dy, dtype, {kN, kC});
    MNT_Tensor tdsum = Upload(dsum, dtype, {kN, kC});
    MNT_Tensor tdw = Upload(std::vector<double>(kC, 0.0), dtype, {kC});
    MNT_Tensor tdb = Upload(std::vector<double>(kC, 0.0), dtype, {kC});
    // dx written over dsum (the permitted alias).
    s = Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD, {tdy, tsum, tw, tmean, trstd, tdsum},
            {tdsum, tdw, tdb}, &p);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(AllCloseRelative(Download(tdsum), ref.dx, tol));
    EXPECT_TRUE(AllCloseRelative(Download(tdw), ref.dw, tol));
    EXPECT_TRUE(AllCloseRelative(Download(tdb), ref.db, tol));
  }
}

// The fused ops against ADD + LAYERNORM_FORWARD and LAYERNORM_BACKWARD + ADD:
// the forward gives the same bits (the norm reads the stored sum), the
// backward's weight/bias gradients the same bits and dx the same values
// within one rounding of the sum.
TEST_F(ResidualLayerNormTest, MatchesTheSeparateOps) {
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    MNT_Tensor x = Upload(Random(kN * kC, -2, 3), dtype, {kN, kC});
    MNT_Tensor r = Upload(Random(kN * kC), dtype, {kN, kC});
    MNT_Tensor w = Upload(Random(kC, 0.5, 1.5), dtype, {kC});
    MNT_Tensor b = Upload(Random(kC), dtype, {kC});
    MNT_Tensor dy = Upload(Random(kN * kC), dtype, {kN, kC});
    const std::vector<double> dsum0 = Stored(Random(kN * kC), dtype);
    const std::vector<double> dw0 = Stored(Random(kC), dtype);
    MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, kEps, 1};

    MNT_Tensor sum1 = Empty(dtype, {kN, kC}), y1 = Empty(dtype, {kN, kC});
    MNT_Tensor m1 = Empty(MNT_DTYPE_F32, {kN}), s1 = Empty(MNT_DTYPE_F32, {kN});
    const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
    ASSERT_TRUE(Run(MNT_OP_ADD, {x, r}, {sum1}, &add).ok());
    ASSERT_TRUE(Run(MNT_OP_LAYERNORM_FORWARD, {sum1, w, b}, {y1, m1, s1}, &p).ok());

    // The fused sum written over x (the permitted alias).
    MNT_Tensor y2 = Empty(dtype, {kN, kC});
    MNT_Tensor m2 = Empty(MNT_DTYPE_F32, {kN}), s2 = Empty(MNT_DTYPE_F32, {kN});
    ASSERT_TRUE(Run(MNT_OP_RESIDUAL_LAYERNORM_FORWARD, {x, r, w, b}, {x, y2, m2, s2}, &p).ok());
    EXPECT_EQ(Bytes(x), Bytes(sum1));
    EXPECT_EQ(Bytes(y2), Bytes(y1));
    EXPECT_EQ(Bytes(m2), Bytes(m1));
    EXPECT_EQ(Bytes(s2), Bytes(s1));

    MNT_Tensor dx1 = Empty(dtype, {kN, kC}), dres1 = Upload(dsum0, dtype, {kN, kC});
    MNT_Tensor dw1 = Upload(dw0, dtype, {kC}), db1 = Upload(dw0, dtype, {kC});
    ASSERT_TRUE(Run(MNT_OP_LAYERNORM_BACKWARD, {dy, sum1, w, m1, s1}, {dx1, dw1, db1}, &p).ok());
    ASSERT_TRUE(Run(MNT_OP_ADD, {dres1, dx1}, {dres1}, &add).ok());
    MNT_Tensor dres2 = Upload(dsum0, dtype, {kN, kC});
    MNT_Tensor dw2 = Upload(dw0, dtype, {kC}), db2 = Upload(dw0, dtype, {kC});
    ASSERT_TRUE(Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD, {dy, x, w, m2, s2, dres2},
                    {dres2, dw2, db2}, &p).ok());
    EXPECT_EQ(Bytes(dw2), Bytes(dw1));
    EXPECT_EQ(Bytes(db2), Bytes(db1));
    EXPECT_TRUE(AllCloseRelative(Download(dres2), Download(dres1), DTypeTolerance(dtype)));

    // Without dsum the fused backward is LAYERNORM_BACKWARD's dx.
    MNT_Tensor dx3 = Empty(dtype, {kN, kC});
    ASSERT_TRUE(Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD, {dy, x, w, m2, s2},
                    {dx3, dw2, db2}, &p).ok());
    EXPECT_EQ(Download(dx3), Download(dx1));
  }
}

TEST_F(ResidualLayerNormTest, SameBitsEveryRun) {
  const MNT_DType dtype = MNT_DTYPE_F32;
  constexpr int64_t n = 300, c = 200;  // above the threading threshold
  MNT_Tensor x = Upload(Random(n * c), dtype, {n, c}), r = Upload(Random(n * c), dtype, {n, c});
  MNT_Tensor w = Upload(Random(c), dtype, {c}), b = Upload(Random(c), dtype, {c});
  MNT_Tensor dy = Upload(Random(n * c), dtype, {n, c});
  MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, kEps, 0};
  std::vector<std::vector<uint8_t>> first;
  for (int run = 0; run < 2; ++run) {
    MNT_Tensor sum = Empty(dtype, {n, c}), y = Empty(dtype, {n, c});
    MNT_Tensor m = Empty(MNT_DTYPE_F32, {n}), s = Empty(MNT_DTYPE_F32, {n});
    MNT_Tensor dx = Empty(dtype, {n, c}), dw = Empty(dtype, {c}), db = Empty(dtype, {c});
    ASSERT_TRUE(Run(MNT_OP_RESIDUAL_LAYERNORM_FORWARD, {x, r, w, b}, {sum, y, m, s}, &p).ok());
    ASSERT_TRUE(Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD, {dy, sum, w, m, s}, {dx, dw, db}, &p).ok());
    std::vector<std::vector<uint8_t>> bytes = {Bytes(y), Bytes(dx), Bytes(dw), Bytes(db)};
    if (run == 0) first = bytes;
    else EXPECT_EQ(bytes, first);
  }
}

TEST_F(ResidualLayerNormTest, ShapeErrors) {
  MNT_Tensor x = Upload(Random(kN * kC), MNT_DTYPE_F32, {kN, kC});
  MNT_Tensor r = Upload(Random((kN + 1) * kC), MNT_DTYPE_F32, {kN + 1, kC});
  MNT_Tensor w = Upload(Random(kC), MNT_DTYPE_F32, {kC});
  MNT_Tensor m = Empty(MNT_DTYPE_F32, {kN});
  MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, kEps, 0};
  EXPECT_EQ(Run(MNT_OP_RESIDUAL_LAYERNORM_FORWARD, {x, r, w, w}, {x, x, m, m}, &p).message(),
            "RESIDUAL_LAYERNORM_FORWARD: in[1] r is f32[10,80], expected f32[9,80]");
  EXPECT_EQ(Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD, {x, x, w, m, m, r}, {x, w, w}, &p).message(),
            "RESIDUAL_LAYERNORM_BACKWARD: in[5] dsum is f32[10,80], expected f32[9,80]");
}

}  // namespace
}  // namespace mnt::cpu

// BATCHNORM_FORWARD / BACKWARD against a float64 reference on fresh random
// inputs (training and inference, rank 2 and 4, every storage dtype with
// fp32 statistics), running statistics as torch updates them, the backward
// against central finite differences, accumulate, and operand errors.
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

constexpr double kEps = 1e-5, kMomentum = 0.1;

struct Shape {
  int64_t n, c, inner;
  std::initializer_list<int64_t> dims;
};

const Shape kShapes[] = {{4, 3, 6, {4, 3, 2, 3}}, {5, 4, 1, {5, 4}}};

// Training-mode forward in double; mean/var biased per channel.
std::vector<double> Forward(const Shape& s, const std::vector<double>& x,
                            const std::vector<double>& g,
                            const std::vector<double>& b,
                            std::vector<double>* mean = nullptr,
                            std::vector<double>* var = nullptr) {
  std::vector<double> m(s.c, 0), v(s.c, 0), y(x.size());
  const double count = double(s.n * s.inner);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.inner; ++i) m[c] += x[(n * s.c + c) * s.inner + i] / count;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.inner; ++i) {
        const double d = x[(n * s.c + c) * s.inner + i] - m[c];
        v[c] += d * d / count;
      }
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t k = (n * s.c + c) * s.inner + i;
        y[k] = (x[k] - m[c]) / std::sqrt(v[c] + kEps) * g[c] + b[c];
      }
  if (mean) *mean = m;
  if (var) *var = v;
  return y;
}

class BatchNormTest : public BackendFixture {
 protected:
  MNT_BatchNormParams Params(int training, int accumulate = 0) {
    return MNT_BatchNormParams{MNT_BatchNormParams_STRUCT_SIZE, training,
                               static_cast<float>(kMomentum),
                               static_cast<float>(kEps), accumulate};
  }
};

TEST_F(BatchNormTest, TrainingForwardBackwardMatchFloat64) {
  for (const Shape& s : kShapes) {
    for (MNT_DType dtype : FloatDTypes()) {
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(dtype) << " rank "
                                        << s.dims.size());
      const double tol = DTypeTolerance(dtype);
      auto x = Stored(Random(s.n * s.c * s.inner, -2, 3), dtype);
      const auto g = Stored(Random(s.c, 0.5, 1.5), dtype);
      const auto b = Stored(Random(s.c), dtype);
      const auto dy = Stored(Random(x.size()), dtype);
      const auto rm0 = Stored(Random(s.c), MNT_DTYPE_F32);
      const auto rv0 = Stored(Random(s.c, 0.5, 2.0), MNT_DTYPE_F32);
      const MNT_Tensor tx = Upload(x, dtype, s.dims);
      const MNT_Tensor tg = Upload(g, dtype, {s.c});
      const MNT_Tensor tb = Upload(b, dtype, {s.c});
      const MNT_Tensor trm = Upload(rm0, MNT_DTYPE_F32, {s.c});
      const MNT_Tensor trv = Upload(rv0, MNT_DTYPE_F32, {s.c});
      const MNT_Tensor ty = Empty(dtype, s.dims);
      const MNT_Tensor tmean = Empty(MNT_DTYPE_F32, {s.c});
      const MNT_Tensor tinv = Empty(MNT_DTYPE_F32, {s.c});
      const MNT_BatchNormParams train = Params(1);
      sdk::Status st = Run(MNT_OP_BATCHNORM_FORWARD, {tx, tg, tb},
                           {ty, trm, trv, tmean, tinv}, &train);
      ASSERT_TRUE(st.ok()) << st.message();

      std::vector<double> mean, var;
      const auto y = Forward(s, x, g, b, &mean, &var);
      // y is O(1) after normalisation: a relative check with floor 1.
      EXPECT_TRUE(AllCloseRelative(Download(ty), y, tol));
      // Statistics are fp32 in every precision.
      std::vector<double> inv(s.c), rm(s.c), rv(s.c);
      const double count = double(s.n * s.inner);
      for (int64_t c = 0; c < s.c; ++c) {
        inv[c] = 1.0 / std::sqrt(var[c] + kEps);
        rm[c] = (1 - kMomentum) * rm0[c] + kMomentum * mean[c];
        rv[c] = (1 - kMomentum) * rv0[c] + kMomentum * var[c] * count / (count - 1);
      }
      EXPECT_TRUE(AllCloseRelative(Download(tmean), mean, 1e-5));
      EXPECT_TRUE(AllCloseRelative(Download(tinv), inv, 1e-5));
      EXPECT_TRUE(AllCloseRelative(Download(trm), rm, 1e-5));
      EXPECT_TRUE(AllCloseRelative(Download(trv), rv, 1e-5));

      // Backward against central differences of sum(y * dy) in double.
      const MNT_Tensor tdy = Upload(dy, dtype, s.dims);
      const MNT_Tensor tdx = Empty(dtype, s.dims);
      const MNT_Tensor tdg = Empty(dtype, {s.c});
      const MNT_Tensor tdb = Empty(dtype, {s.c});
      st = Run(MNT_OP_BATCHNORM_BACKWARD, {tdy, tx, tg, tmean, tinv},
               {tdx, tdg, tdb}, &train);
      ASSERT_TRUE(st.ok()) << st.message();
      auto gg = g, bb = b;
      auto loss = [&]() {
        const auto yy = Forward(s, x, gg, bb);
        double l = 0;
        for (size_t i = 0; i < yy.size(); ++i) l += yy[i] * dy[i];
        return l;
      };
      auto fd = [&](std::vector<double>& v) {
        std::vector<double> out(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
          const double keep = v[i], h = 1e-6;
          v[i] = keep + h;
          const double up = loss();
          v[i] = keep - h;
          const double down = loss();
          v[i] = keep;
          out[i] = (up - down) / (2 * h);
        }
        return out;
      };
      const double grad_tol = std::max(tol, 1e-4);
      EXPECT_TRUE(AllCloseRelative(Download(tdx), fd(x), grad_tol));
      EXPECT_TRUE(AllCloseRelative(Download(tdg), fd(gg), grad_tol));
      EXPECT_TRUE(AllCloseRelative(Download(tdb), fd(bb), grad_tol));
    }
  }
}

TEST_F(BatchNormTest, InferenceUsesRunningStatisticsAndLeavesThem) {
  const Shape& s = kShapes[0];
  const auto x = Random(s.n * s.c * s.inner, -2, 2);
  const auto g = Random(s.c), b = Random(s.c);
  const auto rm = Stored(Random(s.c), MNT_DTYPE_F32);
  const auto rv = Stored(Random(s.c, 0.5, 2.0), MNT_DTYPE_F32);
  const MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, s.dims);
  const MNT_Tensor trm = Upload(rm, MNT_DTYPE_F32, {s.c});
  const MNT_Tensor trv = Upload(rv, MNT_DTYPE_F32, {s.c});
  const MNT_Tensor ty = Empty(MNT_DTYPE_F32, s.dims);
  const MNT_BatchNormParams eval = Params(0);
  sdk::Status st = Run(MNT_OP_BATCHNORM_FORWARD,
                       {tx, Upload(g, MNT_DTYPE_F32, {s.c}),
                        Upload(b, MNT_DTYPE_F32, {s.c})},
                       {ty, trm, trv}, &eval);
  ASSERT_TRUE(st.ok()) << st.message();
  const auto xs = Stored(x, MNT_DTYPE_F32), gs = Stored(g, MNT_DTYPE_F32),
             bs = Stored(b, MNT_DTYPE_F32);
  std::vector<double> want(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t c = (k / s.inner) % s.c;
    want[k] = (xs[k] - rm[c]) / std::sqrt(rv[c] + kEps) * gs[c] + bs[c];
  }
  EXPECT_TRUE(AllCloseRelative(Download(ty), want, 1e-5));
  EXPECT_EQ(Download(trm), rm);
  EXPECT_EQ(Download(trv), rv);
}

TEST_F(BatchNormTest, BackwardAccumulatesParameterGradients) {
  const Shape& s = kShapes[0];
  const MNT_Tensor tx = Upload(Random(s.n * s.c * s.inner), MNT_DTYPE_F32, s.dims);
  const MNT_Tensor tg = Upload(Random(s.c), MNT_DTYPE_F32, {s.c});
  const MNT_Tensor tdy = Upload(Random(s.n * s.c * s.inner), MNT_DTYPE_F32, s.dims);
  const MNT_Tensor mean = Upload(Random(s.c), MNT_DTYPE_F32, {s.c});
  const MNT_Tensor inv = Upload(Random(s.c, 0.5, 2), MNT_DTYPE_F32, {s.c});
  const MNT_Tensor dx = Empty(MNT_DTYPE_F32, s.dims);
  const MNT_Tensor dg1 = Empty(MNT_DTYPE_F32, {s.c}), db1 = Empty(MNT_DTYPE_F32, {s.c});
  const MNT_BatchNormParams fresh = Params(1, 0), acc = Params(1, 1);
  ASSERT_TRUE(Run(MNT_OP_BATCHNORM_BACKWARD, {tdy, tx, tg, mean, inv},
                  {dx, dg1, db1}, &fresh).ok());
  const auto base_g = Random(s.c), base_b = Random(s.c);
  const MNT_Tensor dg2 = Upload(base_g, MNT_DTYPE_F32, {s.c});
  const MNT_Tensor db2 = Upload(base_b, MNT_DTYPE_F32, {s.c});
  ASSERT_TRUE(Run(MNT_OP_BATCHNORM_BACKWARD, {tdy, tx, tg, mean, inv},
                  {dx, dg2, db2}, &acc).ok());
  auto want_g = Download(dg1), want_b = Download(db1);
  for (int64_t c = 0; c < s.c; ++c) {
    want_g[c] += Stored(base_g, MNT_DTYPE_F32)[c];
    want_b[c] += Stored(base_b, MNT_DTYPE_F32)[c];
  }
  EXPECT_TRUE(AllCloseRelative(Download(dg2), want_g, 1e-6));
  EXPECT_TRUE(AllCloseRelative(Download(db2), want_b, 1e-6));
}

TEST_F(BatchNormTest, OperandErrorsAreOneLine) {
  const MNT_Tensor x = Upload(Random(2 * 3 * 4), MNT_DTYPE_F32, {2, 3, 4});
  const MNT_Tensor v3 = Upload(Random(3), MNT_DTYPE_F32, {3});
  const MNT_Tensor v4 = Upload(Random(4), MNT_DTYPE_F32, {4});
  const MNT_Tensor h3 = Upload(Random(3), MNT_DTYPE_BF16, {3});
  const MNT_Tensor y = Empty(MNT_DTYPE_F32, {2, 3, 4});
  const MNT_BatchNormParams train = Params(1);
  EXPECT_EQ(Run(MNT_OP_BATCHNORM_FORWARD, {x, v4, v3}, {y, v3, v3, v3, v3},
                &train).message(),
            "BATCHNORM_FORWARD: in[1] gamma is f32[4], expected [C=3]");
  EXPECT_EQ(Run(MNT_OP_BATCHNORM_FORWARD, {x, v3, v3}, {y, h3, v3, v3, v3},
                &train).message(),
            "BATCHNORM_FORWARD: out[1] running_mean is bf16[3], expected dtype f32");
  EXPECT_EQ(Run(MNT_OP_BATCHNORM_FORWARD, {x, v3, v3}, {y, v3, v3}, &train).message(),
            "BATCHNORM_FORWARD: out[3] saved_mean is missing (data is NULL)");
  const MNT_Tensor one = Upload(Random(3), MNT_DTYPE_F32, {1, 3});
  const MNT_Tensor y1 = Empty(MNT_DTYPE_F32, {1, 3});
  EXPECT_EQ(Run(MNT_OP_BATCHNORM_FORWARD, {one, v3, v3}, {y1, v3, v3, v3, v3},
                &train).message(),
            "BATCHNORM_FORWARD: in[0] x is f32[1,3]: training needs more than "
            "one value per channel");
}

}  // namespace
}  // namespace mnt::cpu

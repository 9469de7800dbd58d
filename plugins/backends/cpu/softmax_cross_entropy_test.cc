// SOFTMAX, CROSS_ENTROPY (losses, gradient vs finite differences, ignored
// rows, padding classes) and COUNT_CORRECT.
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

constexpr int64_t kB = 13, kV = 11;

// float64 loss of one row over the first `classes` columns.
double RowLoss(const double* row, int64_t classes, int target) {
  double max = row[0];
  for (int64_t j = 1; j < classes; ++j) max = std::max(max, row[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - max);
  return std::log(sum) + max - row[target];
}

class SoftmaxCrossEntropyTest : public BackendFixture {};

TEST_F(SoftmaxCrossEntropyTest, SoftmaxMatchesFloat64) {
  for (MNT_DType dtype : FloatDTypes()) {
    // Large offsets: without max-subtraction exp() overflows.
    std::vector<double> x = Random(kB * kV, -5, 5);
    for (int64_t r = 0; r < kB; ++r) x[r * kV] += 200.0 * (r % 2);
    x = Stored(x, dtype);
    MNT_Tensor tx = Upload(x, dtype, {kB, kV});
    MNT_Tensor ty = Empty(dtype, {kB, kV});
    ASSERT_TRUE(Run(MNT_OP_SOFTMAX, {tx}, {ty}).ok());
    std::vector<double> want(x.size());
    for (int64_t r = 0; r < kB; ++r) {
      double max = x[r * kV], sum = 0;
      for (int64_t j = 0; j < kV; ++j) max = std::max(max, x[r * kV + j]);
      for (int64_t j = 0; j < kV; ++j) sum += std::exp(x[r * kV + j] - max);
      for (int64_t j = 0; j < kV; ++j) want[r * kV + j] = std::exp(x[r * kV + j] - max) / sum;
    }
    EXPECT_TRUE(AllCloseRelative(Download(ty), want, DTypeTolerance(dtype), 1e-3))
        << sdk::DTypeName(dtype);
  }
}

TEST_F(SoftmaxCrossEntropyTest, LossesAndGradient) {
  const int64_t classes = 9;  // columns 9, 10 are padding
  const float grad_scale = 0.25f;
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    std::vector<double> x = Stored(Random(kB * kV, -3, 3), dtype);
    std::vector<int32_t> t(kB);
    for (int64_t r = 0; r < kB; ++r) t[r] = static_cast<int32_t>(rng()() % classes);
    t[2] = -1;    // ignored
    t[7] = -100;  // ignored
    MNT_Tensor tx = Upload(x, dtype, {kB, kV});
    MNT_Tensor tt = UploadI32(t, {kB});
    MNT_Tensor losses = Empty(MNT_DTYPE_F32, {kB});
    MNT_Tensor dlogits = Empty(dtype, {kB, kV});
    MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, grad_scale, classes};
    const sdk::Status s = Run(MNT_OP_CROSS_ENTROPY, {tx, tt}, {losses, dlogits}, &p);
    ASSERT_TRUE(s.ok()) << s.message();

    std::vector<double> want_loss(kB, 0.0), want_grad(kB * kV, 0.0), fd(kB * kV, 0.0);
    for (int64_t r = 0; r < kB; ++r) {
      if (t[r] < 0) continue;
      double* row = x.data() + r * kV;
      want_loss[r] = RowLoss(row, classes, t[r]);
      double max = row[0], sum = 0;
      for (int64_t j = 0; j < classes; ++j) max = std::max(max, row[j]);
      for (int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - max);
      for (int64_t j = 0; j < classes; ++j) {
        want_grad[r * kV + j] =
            (std::exp(row[j] - max) / sum - (j == t[r])) * grad_scale;
        // Central difference of the float64 loss.
        const double h = 1e-6, saved = row[j];
        row[j] = saved + h;
        const double up = RowLoss(row, classes, t[r]);
        row[j] = saved - h;
        const double down = RowLoss(row, classes, t[r]);
        row[j] = saved;
        fd[r * kV + j] = (up - down) / (2 * h) * grad_scale;
      }
    }
    EXPECT_TRUE(AllCloseRelative(Download(losses), want_loss, 1e-5));
    const std::vector<double> got = Download(dlogits);
    EXPECT_TRUE(AllCloseRelative(got, want_grad, DTypeTolerance(dtype), grad_scale));
    EXPECT_TRUE(AllCloseRelative(got, fd, std::max(DTypeTolerance(dtype), 1e-4), grad_scale));
    for (int64_t j = 0; j < kV; ++j) {
      EXPECT_EQ(got[2 * kV + j], 0.0);  // ignored row
      EXPECT_EQ(got[7 * kV + j], 0.0);
    }
    for (int64_t r = 0; r < kB; ++r) {
      EXPECT_EQ(got[r * kV + 9], 0.0);  // padding classes
      EXPECT_EQ(got[r * kV + 10], 0.0);
    }
  }
}

// ABI 1.6: a device grad multiplier m scales dlogits by the fp32 product
// m * grad_scale, the same bits as that product passed as grad_scale; the
// losses do not change; a multiplier that is not F32 [1] is refused.
TEST_F(SoftmaxCrossEntropyTest, DeviceGradMultiplierIsOneProductWithGradScale) {
  const int64_t classes = 10;
  const float m = static_cast<float>(Random(1, 100, 70000)[0]);  // not a power of two
  const float grad_scale = 1.0f / 3.0f;
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    MNT_Tensor tx = Upload(Stored(Random(kB * kV, -3, 3), dtype), dtype, {kB, kV});
    std::vector<int32_t> t(kB);
    for (int64_t r = 0; r < kB; ++r) t[r] = static_cast<int32_t>(rng()() % classes);
    t[4] = -1;
    MNT_Tensor tt = UploadI32(t, {kB});
    MNT_Tensor tm = Upload({m}, MNT_DTYPE_F32, {1});
    MNT_Tensor loss_host = Empty(MNT_DTYPE_F32, {kB}), loss_dev = Empty(MNT_DTYPE_F32, {kB});
    MNT_Tensor d_host = Empty(dtype, {kB, kV}), d_dev = Empty(dtype, {kB, kV});
    const MNT_CrossEntropyParams host{MNT_CrossEntropyParams_STRUCT_SIZE, m * grad_scale, classes};
    const MNT_CrossEntropyParams dev{MNT_CrossEntropyParams_STRUCT_SIZE, grad_scale, classes};
    ASSERT_TRUE(Run(MNT_OP_CROSS_ENTROPY, {tx, tt}, {loss_host, d_host}, &host).ok());
    const sdk::Status s = Run(MNT_OP_CROSS_ENTROPY, {tx, tt, tm}, {loss_dev, d_dev}, &dev);
    ASSERT_TRUE(s.ok()) << s.message();
    const std::vector<double> a = Download(d_host), b = Download(d_dev);
    EXPECT_EQ(a, b);
    EXPECT_EQ(Download(loss_host), Download(loss_dev));
    double largest = 0;
    for (double v : b) largest = std::max(largest, std::abs(v));
    EXPECT_GT(largest, 0.0);  // the comparison saw gradients, not zeros
  }
  MNT_Tensor tx = Upload(Random(kB * kV), MNT_DTYPE_F32, {kB, kV});
  MNT_Tensor tt = UploadI32(std::vector<int32_t>(kB, 1), {kB});
  const MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, 1.0f, 0};
  for (MNT_Tensor bad : {Upload({1.0, 2.0}, MNT_DTYPE_F32, {2}), Upload({1.0}, MNT_DTYPE_BF16, {1})}) {
    const sdk::Status s = Run(MNT_OP_CROSS_ENTROPY, {tx, tt, bad},
                              {Empty(MNT_DTYPE_F32, {kB}), Empty(MNT_DTYPE_F32, {kB, kV})}, &p);
    EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(s.message().find("grad_multiplier"), std::string::npos) << s.message();
  }
}

TEST_F(SoftmaxCrossEntropyTest, LossWithoutGradientAndBadTargets) {
  MNT_Tensor tx = Upload(Random(kB * kV), MNT_DTYPE_F32, {kB, kV});
  std::vector<int32_t> t(kB, 1);
  MNT_Tensor losses = Empty(MNT_DTYPE_F32, {kB});
  MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, 1.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_CROSS_ENTROPY, {tx, UploadI32(t, {kB})}, {losses}, &p).ok());
  for (double l : Download(losses)) EXPECT_TRUE(std::isfinite(l) && l > 0);
  t[4] = kV;
  EXPECT_EQ(Run(MNT_OP_CROSS_ENTROPY, {tx, UploadI32(t, {kB})}, {losses}, &p).message(),
            "CROSS_ENTROPY: in[1] targets[4] = 11 is not below num_classes 11");
  p.num_classes = kV + 1;
  EXPECT_EQ(Run(MNT_OP_CROSS_ENTROPY, {tx, UploadI32(t, {kB})}, {losses}, &p).message(),
            "CROSS_ENTROPY: num_classes 12 is outside [0, 11] (in[0] logits's last dim)");
}

TEST_F(SoftmaxCrossEntropyTest, CountCorrect) {
  std::vector<double> x = Random(kB * kV);
  std::vector<int32_t> t(kB);
  int want = 0;
  for (int64_t r = 0; r < kB; ++r) {
    int64_t best = 0;
    for (int64_t j = 1; j < 8; ++j) if (x[r * kV + j] > x[r * kV + best]) best = j;
    x[r * kV + 9] = 10.0;  // padding column would win if it were looked at
    t[r] = (r % 3 == 0) ? static_cast<int32_t>(best) : static_cast<int32_t>((best + 1) % 8);
    want += (r % 3 == 0);
  }
  MNT_Tensor count = Empty(MNT_DTYPE_F32, {1});
  MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, 1.0f, 8};
  ASSERT_TRUE(Run(MNT_OP_COUNT_CORRECT,
                  {Upload(x, MNT_DTYPE_F32, {kB, kV}), UploadI32(t, {kB})},
                  {count}, &p).ok());
  EXPECT_EQ(Download(count)[0], want);
}

}  // namespace
}  // namespace mnt::cpu

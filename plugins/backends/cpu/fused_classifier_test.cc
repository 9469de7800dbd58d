// FUSED_CLASSIFIER against a float64 reference on fresh random logits:
// losses, the in-place dlogits (grad_scale times an optional device
// multiplier), the mean, ignored rows, padding columns, large offsets; the
// same numbers as CROSS_ENTROPY with a separate dlogits buffer; bad targets
// refused before anything is written.
// Tolerances: losses 1e-5 relative (fp32 math on stored logits); dlogits
// the storage dtype's (fp32 1e-5, bf16/fp16 1e-2) relative to grad_scale.
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

constexpr int64_t kB = 17, kV = 41, kClasses = 37;  // 4 padding columns

class FusedClassifierTest : public BackendFixture {
 protected:
  std::vector<int32_t> Targets() {
    std::vector<int32_t> t(kB);
    for (int64_t r = 0; r < kB; ++r) t[r] = static_cast<int32_t>(rng()() % kClasses);
    t[3] = -1;  // ignored rows
    t[11] = -100;
    return t;
  }
};

TEST_F(FusedClassifierTest, MatchesFloat64InPlace) {
  const float grad_scale = 0.125f, multiplier = 3.0f;
  for (MNT_DType dtype : FloatDTypes()) {
    for (bool with_multiplier : {false, true}) {
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(dtype) << " multiplier "
                                        << with_multiplier);
      std::vector<double> x = Random(kB * kV, -4.0, 4.0);
      for (int64_t r = 0; r < kB; r += 2) x[r * kV + 5] += 300.0;  // needs max-subtraction
      x = Stored(x, dtype);
      const std::vector<int32_t> t = Targets();
      MNT_Tensor logits = Upload(x, dtype, {kB, kV});
      MNT_Tensor losses = Empty(MNT_DTYPE_F32, {kB});
      MNT_Tensor mean = Empty(MNT_DTYPE_F32, {1});
      std::vector<MNT_Tensor> in = {UploadI32(t, {kB})};
      if (with_multiplier) in.push_back(Upload({multiplier}, MNT_DTYPE_F32, {1}));
      MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, grad_scale, kClasses};
      const sdk::Status s = Run(MNT_OP_FUSED_CLASSIFIER, in, {logits, losses, mean}, &p);
      ASSERT_TRUE(s.ok()) << s.message();

      const double scale = grad_scale * (with_multiplier ? multiplier : 1.0);
      std::vector<double> want_loss(kB, 0.0), want_grad(kB * kV, 0.0);
      double total = 0.0;
      for (int64_t r = 0; r < kB; ++r) {
        if (t[r] < 0) continue;
        const double* row = x.data() + r * kV;
        double max = row[0], sum = 0.0;
        for (int64_t j = 0; j < kClasses; ++j) max = std::max(max, row[j]);
        for (int64_t j = 0; j < kClasses; ++j) sum += std::exp(row[j] - max);
        want_loss[r] = std::log(sum) + max - row[t[r]];
        total += want_loss[r];
        for (int64_t j = 0; j < kClasses; ++j) {
          want_grad[r * kV + j] = (std::exp(row[j] - max) / sum - (j == t[r])) * scale;
        }
      }
      EXPECT_TRUE(AllCloseRelative(Download(losses), want_loss, 1e-5));
      EXPECT_TRUE(AllCloseRelative(Download(mean), {total / kB}, 1e-5));
      const std::vector<double> got = Download(logits);
      EXPECT_TRUE(AllCloseRelative(got, want_grad, DTypeTolerance(dtype), scale));
      for (int64_t j = 0; j < kV; ++j) {
        EXPECT_EQ(got[3 * kV + j], 0.0);  // ignored rows
        EXPECT_EQ(got[11 * kV + j], 0.0);
      }
      for (int64_t r = 0; r < kB; ++r) {
        for (int64_t j = kClasses; j < kV; ++j) EXPECT_EQ(got[r * kV + j], 0.0);
      }
    }
  }
}

// The fused op is CROSS_ENTROPY with dlogits written over the logits: the
// same bits on this backend (same formula, same order).
TEST_F(FusedClassifierTest, SameBitsAsCrossEntropy) {
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    const std::vector<double> x = Stored(Random(kB * kV, -5.0, 5.0), dtype);
    const std::vector<int32_t> t = Targets();
    MNT_Tensor targets = UploadI32(t, {kB});
    MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, 0.25f, kClasses};
    MNT_Tensor logits = Upload(x, dtype, {kB, kV});
    MNT_Tensor dlogits = Empty(dtype, {kB, kV});
    MNT_Tensor losses = Empty(MNT_DTYPE_F32, {kB});
    ASSERT_TRUE(Run(MNT_OP_CROSS_ENTROPY, {logits, targets}, {losses, dlogits}, &p).ok());
    MNT_Tensor fused = Upload(x, dtype, {kB, kV});
    MNT_Tensor fused_losses = Empty(MNT_DTYPE_F32, {kB});
    ASSERT_TRUE(Run(MNT_OP_FUSED_CLASSIFIER, {targets}, {fused, fused_losses}, &p).ok());
    EXPECT_EQ(Bytes(fused), Bytes(dlogits));
    EXPECT_EQ(Bytes(fused_losses), Bytes(losses));
  }
}

TEST_F(FusedClassifierTest, BadTargetsAndOperandsAreRefusedBeforeWriting) {
  const std::vector<double> x = Random(kB * kV);
  MNT_Tensor logits = Upload(x, MNT_DTYPE_F32, {kB, kV});
  MNT_Tensor losses = Empty(MNT_DTYPE_F32, {kB});
  std::vector<int32_t> t(kB, 1);
  t[6] = kClasses;
  MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, 1.0f, kClasses};
  EXPECT_EQ(Run(MNT_OP_FUSED_CLASSIFIER, {UploadI32(t, {kB})}, {logits, losses}, &p)
                .message(),
            "FUSED_CLASSIFIER: in[0] targets[6] = 37 is not below num_classes 37");
  EXPECT_EQ(Download(logits), Stored(x, MNT_DTYPE_F32));  // untouched
  t[6] = 0;
  MNT_Tensor two = Empty(MNT_DTYPE_F32, {2});
  EXPECT_EQ(Run(MNT_OP_FUSED_CLASSIFIER, {UploadI32(t, {kB}), two}, {logits, losses}, &p)
                .message(),
            "FUSED_CLASSIFIER: in[1] loss_multiplier is f32[2], expected f32[1]");
  MNT_Tensor short_losses = Empty(MNT_DTYPE_F32, {kB - 1});
  EXPECT_EQ(Run(MNT_OP_FUSED_CLASSIFIER, {UploadI32(t, {kB})}, {logits, short_losses}, &p)
                .message(),
            "FUSED_CLASSIFIER: out[1] losses is f32[16], expected f32[B=17]");
}

}  // namespace
}  // namespace mnt::cpu

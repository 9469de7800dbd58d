// The ABI 1.2/1.3 layer ops of the cuda backend (attention fallback, cuDNN
// convolutions, pooling, batch norm) against the CPU reference backend on
// fresh random inputs (seed printed), odd sizes, every storage dtype, outputs
// poisoned with NaN first (NaN never passes AllClose).
// Tolerances, relative, plus the output dtype's rounding (bf16 1e-2, f16
// 2e-3) where larger:
//   attention fp32 1e-4 (fp32 dot products and softmax on the GPU vs double
//     on the CPU), atol 1e-5 (dqkv 1e-4; 2e-3 with 16-bit storage);
//   convolution (normwise: atol = tol * max|reference|): fp32 5e-5 (sums of
//     up to C*R*S products in another order, possibly Winograd), tf32 3e-3,
//     bf16 / f16 operands 1e-2 / 3e-3 (1e-3 with an fp32 output);
//   pooling and batch norm fp32 1e-5 (same formulas, double statistics).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::AllClose;
using testing::DualBackend;
using testing::Pair;
using testing::StorageTolerance;

constexpr MNT_DType kFloatTypes[] = {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16};

class CudaLayersTest : public testing::DualBackendTest {
 protected:
  // The attention cases test the fallback kernels (deterministic, fp32
  // math); cuDNN SDPA has its own test (cuda_attention_cudnn_test).
  const char* options() const override { return "attention=fallback"; }
  // Element-wise: |got - want| <= atol + rtol |want|, rtol at least the
  // output dtype's rounding.
  void ExpectSame(const Pair& p, double rtol, double atol) {
    rtol = std::max(StorageTolerance(p.dtype), rtol);
    EXPECT_TRUE(AllClose(d_.Download(p, true), d_.Download(p, false), rtol, atol));
  }
  // Normwise: atol = tol * max |reference|.
  void ExpectNormwise(const Pair& p, double tol) {
    tol = std::max(StorageTolerance(p.dtype), tol);
    const std::vector<float> want = d_.Download(p, false);
    double scale = 0;
    for (float v : want) scale = std::max(scale, double(std::fabs(v)));
    EXPECT_TRUE(AllClose(d_.Download(p, true), want, tol, tol * scale));
  }
};

// ---- Attention ------------------------------------------------------------------

TEST_F(CudaLayersTest, AttentionForwardBackwardCausalAndFull) {
  const int64_t b = 2, t = 37, h = 3, dh = 16, c = h * dh;  // odd T
  for (MNT_DType dt : kFloatTypes) {
    for (int causal : {1, 0}) {
      for (float scale : {0.0f, 0.3f}) {
        SCOPED_TRACE(::testing::Message() << "dtype " << dt << " causal " << causal
                                          << " scale " << scale);
        const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, int32_t(h), causal,
                                    scale};
        auto qkv = d_.Upload(Random(b * t * 3 * c), dt, {b, t, 3 * c});
        auto y = d_.Poisoned(dt, {b, t, c});
        auto lse = d_.Poisoned(MNT_DTYPE_F32, {b, h, t});
        ASSERT_TRUE(d_.RunBoth(MNT_OP_ATTENTION_FORWARD, {qkv.get()},
                               {y.get(), lse.get()}, &p).ok());
        ExpectSame(*y, 1e-4, 1e-5);
        ExpectSame(*lse, 1e-4, 1e-5);
        auto dy = d_.Upload(Random(b * t * c), dt, {b, t, c});
        auto dqkv = d_.Poisoned(dt, {b, t, 3 * c});
        // Both backends read their own forward's y and lse.
        ASSERT_TRUE(d_.RunBoth(MNT_OP_ATTENTION_BACKWARD,
                               {dy.get(), qkv.get(), y.get(), lse.get()}, {dqkv.get()},
                               &p).ok());
        // 16-bit storage: each side's backward reads its own rounded y, which
        // may differ by one ulp; that shifts dy.y and so dqkv by ~1e-4
        // absolute, hence atol 2e-3 there (values are O(0.1..1)).
        ExpectSame(*dqkv, 1e-4, dt == MNT_DTYPE_F32 ? 1e-4 : 2e-3);
        // Deterministic: a second backward is bit-identical.
        const std::vector<uint8_t> first = d_.Bytes(*dqkv, true);
        ASSERT_TRUE(d_.RunCuda(MNT_OP_ATTENTION_BACKWARD,
                               {dy.get(), qkv.get(), y.get(), lse.get()}, {dqkv.get()},
                               &p).ok());
        EXPECT_EQ(d_.Bytes(*dqkv, true), first);
      }
    }
  }
}

// The tiled kernels across many tiles: T not a multiple of any tile edge
// (forward/dQ tiles of 32 and dK/dV tiles of 16 at D = 64), head dims that
// pick other tile edges (72, 200) or are smaller than a warp (8).
TEST_F(CudaLayersTest, AttentionManyTilesAndHeadDims) {
  struct Case {
    int64_t b, h, t, d;
  };
  for (const Case& k : {Case{1, 2, 130, 64}, Case{2, 1, 67, 72}, Case{1, 1, 45, 200},
                        Case{2, 3, 97, 8}}) {
    for (MNT_DType dt : kFloatTypes) {
      for (int causal : {1, 0}) {
        SCOPED_TRACE(::testing::Message() << "B " << k.b << " H " << k.h << " T " << k.t
                                          << " D " << k.d << " dtype " << dt << " causal "
                                          << causal);
        const int64_t c = k.h * k.d;
        const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, int32_t(k.h), causal,
                                    0.0f};
        auto qkv = d_.Upload(Random(k.b * k.t * 3 * c), dt, {k.b, k.t, 3 * c});
        auto y = d_.Poisoned(dt, {k.b, k.t, c});
        auto lse = d_.Poisoned(MNT_DTYPE_F32, {k.b, k.h, k.t});
        ASSERT_TRUE(d_.RunBoth(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y.get(), lse.get()},
                               &p).ok());
        ExpectSame(*y, 1e-4, 1e-5);
        ExpectSame(*lse, 1e-4, 1e-5);
        auto dy = d_.Upload(Random(k.b * k.t * c), dt, {k.b, k.t, c});
        auto dqkv = d_.Poisoned(dt, {k.b, k.t, 3 * c});
        ASSERT_TRUE(d_.RunBoth(MNT_OP_ATTENTION_BACKWARD,
                               {dy.get(), qkv.get(), y.get(), lse.get()}, {dqkv.get()}, &p)
                        .ok());
        ExpectSame(*dqkv, 1e-4, dt == MNT_DTYPE_F32 ? 1e-4 : 2e-3);
        const std::vector<uint8_t> first_y = d_.Bytes(*y, true);
        const std::vector<uint8_t> first = d_.Bytes(*dqkv, true);
        ASSERT_TRUE(d_.RunCuda(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y.get(), lse.get()}, &p)
                        .ok());
        ASSERT_TRUE(d_.RunCuda(MNT_OP_ATTENTION_BACKWARD,
                               {dy.get(), qkv.get(), y.get(), lse.get()}, {dqkv.get()}, &p)
                        .ok());
        EXPECT_EQ(d_.Bytes(*y, true), first_y);
        EXPECT_EQ(d_.Bytes(*dqkv, true), first);
      }
    }
  }
}

TEST_F(CudaLayersTest, AttentionRejectsBadShapesInOneLine) {
  auto qkv = d_.Upload(Random(2 * 5 * 12), MNT_DTYPE_F32, {2, 5, 12});
  auto y = d_.Poisoned(MNT_DTYPE_F32, {2, 5, 4});
  auto lse = d_.Poisoned(MNT_DTYPE_F32, {2, 3, 5});
  const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, 3, 1, 0.0f};
  const sdk::Status s =
      d_.RunBoth(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y.get(), lse.get()}, &p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("num_heads 3"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

// ---- Convolution ----------------------------------------------------------------

struct ConvCase {
  int64_t n, c, h, w, k, r, s;
  int32_t pad, stride, dilation, groups;
};

struct ModeCase {
  MNT_ComputeMode mode;
  MNT_DType x, w, y;  // storage
  double tol;
};

TEST_F(CudaLayersTest, Conv2dAllPassesEveryModeAgainstCpu) {
  const ConvCase shapes[] = {
      {2, 6, 11, 9, 8, 3, 3, 1, 1, 1, 1},   // same-size 3x3, odd spatial
      {3, 4, 13, 10, 6, 3, 3, 2, 2, 2, 2},  // strided, dilated, grouped
      {2, 16, 7, 7, 12, 1, 1, 0, 1, 1, 1},  // 1x1 (a GEMM)
      {1, 3, 17, 15, 5, 5, 3, 2, 3, 1, 1},  // non-square filter, stride 3
  };
  const ModeCase modes[] = {
      {MNT_COMPUTE_F32, MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_DTYPE_F32, 5e-5},
      {MNT_COMPUTE_TF32, MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_DTYPE_F32, 3e-3},
      {MNT_COMPUTE_BF16, MNT_DTYPE_BF16, MNT_DTYPE_BF16, MNT_DTYPE_BF16, 1e-2},
      {MNT_COMPUTE_F16, MNT_DTYPE_F16, MNT_DTYPE_F16, MNT_DTYPE_F16, 3e-3},
      // Mixed storage: staged operands and an fp32 output. cuDNN runs on fp32
      // tensors holding bf16 values (exact in TF32), so the output keeps the
      // accumulator's bits: 1e-3 (tf32-like algorithm error), where a round
      // trip through bf16 (up to 3.9e-3 relative) would fail.
      {MNT_COMPUTE_BF16, MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F32, 1e-3},
      {MNT_COMPUTE_F16, MNT_DTYPE_F16, MNT_DTYPE_F16, MNT_DTYPE_F32, 1e-3},
      // Output in the other 16-bit format: fp32 scratch, one rounding.
      {MNT_COMPUTE_F16, MNT_DTYPE_F16, MNT_DTYPE_F16, MNT_DTYPE_BF16, 1e-2},
      {MNT_COMPUTE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_DTYPE_F32, 5e-5},
  };
  for (const ConvCase& cs : shapes) {
    for (const ModeCase& m : modes) {
      SCOPED_TRACE(::testing::Message()
                   << "x [" << cs.n << "," << cs.c << "," << cs.h << "," << cs.w
                   << "] w [" << cs.k << "," << cs.c / cs.groups << "," << cs.r << ","
                   << cs.s << "] pad " << cs.pad << " stride " << cs.stride << " dil "
                   << cs.dilation << " groups " << cs.groups << " mode " << m.mode
                   << " x/w/y dtypes " << m.x << "/" << m.w << "/" << m.y);
      const int64_t p = (cs.h + 2 * cs.pad - cs.dilation * (cs.r - 1) - 1) / cs.stride + 1;
      const int64_t q = (cs.w + 2 * cs.pad - cs.dilation * (cs.s - 1) - 1) / cs.stride + 1;
      MNT_Conv2dParams prm{MNT_Conv2dParams_STRUCT_SIZE, cs.pad, cs.pad, cs.stride,
                           cs.stride, cs.dilation, cs.dilation, cs.groups, m.mode, 0};
      auto x = d_.Upload(Random(cs.n * cs.c * cs.h * cs.w), m.x, {cs.n, cs.c, cs.h, cs.w});
      auto w = d_.Upload(Random(cs.k * (cs.c / cs.groups) * cs.r * cs.s, 0.3f), m.w,
                         {cs.k, cs.c / cs.groups, cs.r, cs.s});
      auto bias = d_.Upload(Random(cs.k), m.y, {cs.k});
      auto y = d_.Poisoned(m.y, {cs.n, cs.k, p, q});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_FORWARD, {x.get(), w.get(), bias.get()},
                             {y.get()}, &prm).ok());
      ExpectNormwise(*y, m.tol);

      auto dy = d_.Upload(Random(cs.n * cs.k * p * q), m.y, {cs.n, cs.k, p, q});
      auto dx = d_.Poisoned(m.x, {cs.n, cs.c, cs.h, cs.w});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_BACKWARD_DATA, {dy.get(), w.get()},
                             {dx.get()}, &prm).ok());
      ExpectNormwise(*dx, m.tol);
      auto dw = d_.Poisoned(m.w, {cs.k, cs.c / cs.groups, cs.r, cs.s});
      auto db = d_.Poisoned(m.y, {cs.k});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_BACKWARD_FILTER, {dy.get(), x.get()},
                             {dw.get(), db.get()}, &prm).ok());
      ExpectNormwise(*dw, m.tol);
      ExpectSame(*db, 1e-5, 1e-5);

      // accumulate: beta = 1 into the previous results.
      prm.accumulate = 1;
      ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_BACKWARD_DATA, {dy.get(), w.get()},
                             {dx.get()}, &prm).ok());
      ExpectNormwise(*dx, m.tol);
      ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_BACKWARD_FILTER, {dy.get(), x.get()},
                             {dw.get(), db.get()}, &prm).ok());
      ExpectNormwise(*dw, m.tol);
      ExpectSame(*db, 1e-5, 1e-5);
    }
  }
}

TEST_F(CudaLayersTest, Conv2dFp32IsNotTf32) {
  // x = 1 + 1e-3 v and filters whose channel pairs cancel (w[c+1] = -w[c]),
  // so y = 1e-3 sum w v is small while each product is not: TF32 (10-bit
  // mantissa) would lose the 1e-3 v part of x and be off by ~10% of y; fp32
  // FMA math stays within 1e-4 of max |y|.
  const int64_t n = 2, c = 32, hw = 8, k = 16;
  std::vector<float> xv = Random(n * c * hw * hw), wv = Random(k * c * 9, 0.2f);
  for (float& v : xv) v = 1.0f + v * 1e-3f;
  for (int64_t f = 0; f < k; ++f) {
    for (int64_t ch = 0; ch < c; ch += 2) {
      for (int64_t e = 0; e < 9; ++e) wv[(f * c + ch + 1) * 9 + e] = -wv[(f * c + ch) * 9 + e];
    }
  }
  auto x = d_.Upload(xv, MNT_DTYPE_F32, {n, c, hw, hw});
  auto w = d_.Upload(wv, MNT_DTYPE_F32, {k, c, 3, 3});
  auto y = d_.Poisoned(MNT_DTYPE_F32, {n, k, hw - 2, hw - 2});  // pad 0: no zeros
  const MNT_Conv2dParams prm{MNT_Conv2dParams_STRUCT_SIZE, 0, 0, 1, 1, 1, 1, 1,
                             MNT_COMPUTE_F32, 0};
  ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_FORWARD, {x.get(), w.get()}, {y.get()}, &prm).ok());
  ExpectNormwise(*y, 1e-4);
}

TEST_F(CudaLayersTest, Conv2dRejectsBadGroupsInOneLine) {
  auto x = d_.Upload(Random(1 * 3 * 5 * 5), MNT_DTYPE_F32, {1, 3, 5, 5});
  auto w = d_.Upload(Random(4 * 3 * 9), MNT_DTYPE_F32, {4, 3, 3, 3});
  auto y = d_.Poisoned(MNT_DTYPE_F32, {1, 4, 3, 3});
  const MNT_Conv2dParams prm{MNT_Conv2dParams_STRUCT_SIZE, 0, 0, 1, 1, 1, 1, 2,
                             MNT_COMPUTE_F32, 0};
  const sdk::Status s = d_.RunBoth(MNT_OP_CONV2D_FORWARD, {x.get(), w.get()}, {y.get()}, &prm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("divide by groups"), std::string::npos) << s.message();
}

// ---- Pooling --------------------------------------------------------------------

TEST_F(CudaLayersTest, PoolingForwardBackward) {
  struct PoolCase {
    MNT_PoolKind kind;
    int32_t window, stride, pad, include_pad;
  };
  const int64_t n = 3, c = 5, h = 13, w = 11;
  for (MNT_DType dt : kFloatTypes) {
    for (const PoolCase& k : {PoolCase{MNT_POOL_MAX, 3, 2, 1, 0},
                              PoolCase{MNT_POOL_MAX, 2, 2, 0, 0},
                              PoolCase{MNT_POOL_AVG, 3, 2, 1, 0},
                              PoolCase{MNT_POOL_AVG, 3, 1, 1, 1},
                              PoolCase{MNT_POOL_AVG, 13, 1, 0, 0}}) {  // 13x11 global
      SCOPED_TRACE(::testing::Message() << "dtype " << dt << " kind " << k.kind
                                        << " window " << k.window);
      const int32_t wh = k.window, ww = k.window == 13 ? 11 : k.window;
      const MNT_Pool2dParams prm{MNT_Pool2dParams_STRUCT_SIZE, k.kind, wh, ww, k.stride,
                                 k.stride, k.pad, k.pad, k.include_pad};
      const int64_t p = (h + 2 * k.pad - wh) / k.stride + 1;
      const int64_t q = (w + 2 * k.pad - ww) / k.stride + 1;
      // Small integers: many ties, so the first-maximum rule is exercised.
      std::vector<float> xv = Random(n * c * h * w, 2.0f);
      if (k.kind == MNT_POOL_MAX) {
        for (float& v : xv) v = std::round(v);
      }
      auto x = d_.Upload(xv, dt, {n, c, h, w});
      auto y = d_.Poisoned(dt, {n, c, p, q});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_POOL2D_FORWARD, {x.get()}, {y.get()}, &prm).ok());
      ExpectSame(*y, 1e-5, 1e-6);
      auto dy = d_.Upload(Random(n * c * p * q), dt, {n, c, p, q});
      auto dx = d_.Poisoned(dt, {n, c, h, w});
      ASSERT_TRUE(
          d_.RunBoth(MNT_OP_POOL2D_BACKWARD, {dy.get(), x.get()}, {dx.get()}, &prm).ok());
      ExpectSame(*dx, 1e-5, 1e-6);
    }
  }
}

// ---- Batch norm -----------------------------------------------------------------

TEST_F(CudaLayersTest, BatchNormTrainingInferenceAndBackward) {
  for (MNT_DType dt : kFloatTypes) {
    for (const std::vector<int64_t>& dims :
         {std::vector<int64_t>{4, 7, 5, 3}, std::vector<int64_t>{9, 6}}) {
      SCOPED_TRACE(::testing::Message() << "dtype " << dt << " rank " << dims.size());
      const int64_t c = dims[1];
      int64_t total = 1;
      for (int64_t d : dims) total *= d;
      std::vector<float> xv = Random(total, 2.0f);
      for (float& v : xv) v += 3.0f;  // a mean far from 0
      auto x = d_.Upload(xv, dt, dims);
      auto gamma = d_.Upload(Random(c), dt, {c});
      auto beta = d_.Upload(Random(c), dt, {c});
      auto rm = d_.Upload(Random(c), MNT_DTYPE_F32, {c});
      std::vector<float> var = Random(c);
      for (float& v : var) v = std::fabs(v) + 0.5f;
      auto rv = d_.Upload(var, MNT_DTYPE_F32, {c});
      auto y = d_.Poisoned(dt, dims);
      auto mean = d_.Poisoned(MNT_DTYPE_F32, {c});
      auto invstd = d_.Poisoned(MNT_DTYPE_F32, {c});
      MNT_BatchNormParams prm{MNT_BatchNormParams_STRUCT_SIZE, 1, 0.1f, 1e-5f, 0};
      ASSERT_TRUE(d_.RunBoth(MNT_OP_BATCHNORM_FORWARD, {x.get(), gamma.get(), beta.get()},
                             {y.get(), rm.get(), rv.get(), mean.get(), invstd.get()},
                             &prm).ok());
      ExpectSame(*y, 1e-5, 1e-5);
      ExpectSame(*rm, 1e-5, 1e-6);
      ExpectSame(*rv, 1e-5, 1e-6);
      ExpectSame(*mean, 1e-5, 1e-6);
      ExpectSame(*invstd, 1e-5, 1e-6);

      auto dy = d_.Upload(Random(total), dt, dims);
      auto dx = d_.Poisoned(dt, dims);
      auto dg = d_.Upload(Random(c), dt, {c});
      auto dbeta = d_.Upload(Random(c), dt, {c});
      prm.accumulate = 1;
      ASSERT_TRUE(d_.RunBoth(MNT_OP_BATCHNORM_BACKWARD,
                             {dy.get(), x.get(), gamma.get(), mean.get(), invstd.get()},
                             {dx.get(), dg.get(), dbeta.get()}, &prm).ok());
      ExpectSame(*dx, 1e-4, 1e-5);
      ExpectSame(*dg, 1e-5, 1e-5);
      ExpectSame(*dbeta, 1e-5, 1e-5);

      // Inference: running statistics, nothing updated, saved outputs absent.
      prm.training = 0;
      auto y2 = d_.Poisoned(dt, dims);
      ASSERT_TRUE(d_.RunBoth(MNT_OP_BATCHNORM_FORWARD, {x.get(), gamma.get(), beta.get()},
                             {y2.get(), rm.get(), rv.get()}, &prm).ok());
      ExpectSame(*y2, 1e-5, 1e-5);
      ExpectSame(*rm, 1e-5, 1e-6);
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

// Every non-GEMM kernel of the cuda backend against the CPU reference backend
// on fresh random inputs, odd sizes, every storage dtype, outputs poisoned
// with NaN first. Tolerances: fp32 1e-5 relative (plus the rounding of the
// output dtype for f16/bf16 storage); NaN never passes.
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

class CudaKernelsTest : public testing::DualBackendTest {
 protected:
  // Both sides' outputs agree within the output dtype's tolerance.
  void ExpectSame(const Pair& p, double rtol_extra = 0, double atol = 1e-6) {
    const double rtol = std::max(StorageTolerance(p.dtype), rtol_extra);
    EXPECT_TRUE(AllClose(d_.Download(p, true), d_.Download(p, false), rtol, atol));
  }
};

TEST_F(CudaKernelsTest, FillAndCast) {
  for (MNT_DType out_t : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16, MNT_DTYPE_I32}) {
    auto out = d_.Poisoned(out_t, {37});
    const MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, -3.0};
    ASSERT_TRUE(d_.RunBoth(MNT_OP_FILL, {}, {out.get()}, &p).ok());
    EXPECT_EQ(d_.Bytes(*out, true), d_.Bytes(*out, false));
  }
  for (MNT_DType in_t : kFloatTypes) {
    for (MNT_DType out_t : kFloatTypes) {
      auto x = d_.Upload(Random(1031, 300.0f), in_t, {1031});
      auto y = d_.Poisoned(out_t, {1031});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_CAST, {x.get()}, {y.get()}).ok());
      // Same conversion code on both sides: bit-identical.
      EXPECT_EQ(d_.Bytes(*y, true), d_.Bytes(*y, false)) << in_t << "->" << out_t;
    }
  }
}

TEST_F(CudaKernelsTest, AddAndActivations) {
  for (MNT_DType t : kFloatTypes) {
    const int64_t n = 4099;  // not a multiple of 4: vector body + scalar tail
    auto a = d_.Upload(Random(n), t, {n});
    auto b = d_.Upload(Random(n), t, {n});
    auto out = d_.Poisoned(MNT_DTYPE_F32, {n});
    const MNT_AddParams ap{MNT_AddParams_STRUCT_SIZE, 0.75f, -1.5f};
    ASSERT_TRUE(d_.RunBoth(MNT_OP_ADD, {a.get(), b.get()}, {out.get()}, &ap).ok());
    ExpectSame(*out);
    ASSERT_TRUE(d_.RunBoth(MNT_OP_ADD, {a.get()}, {a.get()}, &ap).ok());  // in place
    ExpectSame(*a);
    for (MNT_Activation act :
         {MNT_ACTIVATION_IDENTITY, MNT_ACTIVATION_RELU, MNT_ACTIVATION_GELU_TANH}) {
      const MNT_ActivationParams p{MNT_ActivationParams_STRUCT_SIZE, act};
      auto y = d_.Poisoned(t, {n});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_ACTIVATION_FORWARD, {b.get()}, {y.get()}, &p).ok());
      ExpectSame(*y);
      auto dx = d_.Poisoned(t, {n});
      ASSERT_TRUE(
          d_.RunBoth(MNT_OP_ACTIVATION_BACKWARD, {b.get(), a.get()}, {dx.get()}, &p).ok());
      ExpectSame(*dx);
    }
  }
}

TEST_F(CudaKernelsTest, SoftmaxCrossEntropyCountCorrect) {
  for (MNT_DType t : kFloatTypes) {
    auto x = d_.Upload(Random(3 * 5 * 1001, 4.0f), t, {3, 5, 1001});
    auto y = d_.Poisoned(t, {3, 5, 1001});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_SOFTMAX, {x.get()}, {y.get()}).ok());
    ExpectSame(*y, 1e-5, 1e-7);

    const int64_t batch = 37, width = 19, classes = 17;  // 2 padding columns
    auto logits = d_.Upload(Random(batch * width, 3.0f), t, {batch, width});
    std::vector<int32_t> target(batch);
    for (int64_t r = 0; r < batch; ++r) target[r] = r % 9 == 4 ? -1 : (r * 7) % classes;
    auto targets = d_.UploadI32(target, {batch});
    auto losses = d_.Poisoned(MNT_DTYPE_F32, {batch});
    auto dlogits = d_.Poisoned(t, {batch, width});
    const MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE, 0.125f, classes};
    ASSERT_TRUE(d_.RunBoth(MNT_OP_CROSS_ENTROPY, {logits.get(), targets.get()},
                           {losses.get(), dlogits.get()}, &p)
                    .ok());
    ExpectSame(*losses, 1e-5, 1e-6);
    ExpectSame(*dlogits, 1e-5, 1e-7);
    // ABI 1.6: the device grad multiplier; on cuda the same bits as the
    // product passed as grad_scale, and close to the CPU backend.
    auto multiplier = d_.Upload({6147.0f / 3.0f}, MNT_DTYPE_F32, {1});
    auto dlogits_m = d_.Poisoned(t, {batch, width});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_CROSS_ENTROPY,
                           {logits.get(), targets.get(), multiplier.get()},
                           {losses.get(), dlogits_m.get()}, &p)
                    .ok());
    ExpectSame(*dlogits_m, 1e-5, 1e-7 * 6147.0);
    const float product = (6147.0f / 3.0f) * 0.125f;
    const MNT_CrossEntropyParams folded{MNT_CrossEntropyParams_STRUCT_SIZE, product, classes};
    auto dlogits_f = d_.Poisoned(t, {batch, width});
    ASSERT_TRUE(d_.RunCuda(MNT_OP_CROSS_ENTROPY, {logits.get(), targets.get()},
                           {losses.get(), dlogits_f.get()}, &folded)
                    .ok());
    EXPECT_EQ(d_.Bytes(*dlogits_m, true), d_.Bytes(*dlogits_f, true));
    auto count = d_.Poisoned(MNT_DTYPE_F32, {1});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_COUNT_CORRECT, {logits.get(), targets.get()},
                           {count.get()}, &p)
                    .ok());
    EXPECT_EQ(d_.Download(*count, true), d_.Download(*count, false));
  }
}

TEST_F(CudaKernelsTest, LayerNormForwardBackward) {
  for (MNT_DType t : kFloatTypes) {
    const int64_t rows = 29, c = 515;
    auto x = d_.Upload(Random(rows * c, 2.0f), t, {rows, c});
    auto w = d_.Upload(Random(c), t, {c});
    auto b = d_.Upload(Random(c), t, {c});
    auto y = d_.Poisoned(t, {rows, c});
    auto mean = d_.Poisoned(MNT_DTYPE_F32, {rows});
    auto rstd = d_.Poisoned(MNT_DTYPE_F32, {rows});
    const MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, 1e-5f, 0};
    ASSERT_TRUE(d_.RunBoth(MNT_OP_LAYERNORM_FORWARD, {x.get(), w.get(), b.get()},
                           {y.get(), mean.get(), rstd.get()}, &p)
                    .ok());
    ExpectSame(*y, 1e-5, 1e-5);
    ExpectSame(*mean, 1e-5, 1e-6);
    ExpectSame(*rstd);
    auto dy = d_.Upload(Random(rows * c), t, {rows, c});
    auto dx = d_.Poisoned(t, {rows, c});
    auto dw = d_.Upload(Random(c), t, {c});  // accumulated into
    auto db = d_.Upload(Random(c), t, {c});
    const MNT_LayerNormParams pa{MNT_LayerNormParams_STRUCT_SIZE, 1e-5f, 1};
    ASSERT_TRUE(d_.RunBoth(MNT_OP_LAYERNORM_BACKWARD,
                           {dy.get(), x.get(), w.get(), mean.get(), rstd.get()},
                           {dx.get(), dw.get(), db.get()}, &pa)
                    .ok());
    ExpectSame(*dx, 1e-4, 1e-5);
    ExpectSame(*dw, 1e-5, 1e-4);
    ExpectSame(*db, 1e-5, 1e-4);
  }
}

TEST_F(CudaKernelsTest, EmbeddingAndBiasGrad) {
  for (MNT_DType t : kFloatTypes) {
    const int64_t vocab = 23, c = 33, n = 71;
    auto table = d_.Upload(Random(vocab * c), t, {vocab, c});
    std::vector<int32_t> id(n);
    for (int64_t i = 0; i < n; ++i) id[i] = static_cast<int32_t>((i * i + 3) % vocab);
    auto ids = d_.UploadI32(id, {n});
    auto out = d_.Poisoned(t, {n, c});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_EMBEDDING_FORWARD, {table.get(), ids.get()}, {out.get()}).ok());
    EXPECT_EQ(d_.Bytes(*out, true), d_.Bytes(*out, false));
    auto dout = d_.Upload(Random(n * c), t, {n, c});
    for (int accumulate : {0, 1}) {
      auto dtable = d_.Upload(Random(vocab * c), t, {vocab, c});
      const MNT_AccumulateParams p{MNT_AccumulateParams_STRUCT_SIZE, accumulate};
      ASSERT_TRUE(
          d_.RunBoth(MNT_OP_EMBEDDING_BACKWARD, {dout.get(), ids.get()}, {dtable.get()}, &p).ok());
      ExpectSame(*dtable, 1e-5, 1e-6);
      auto bias_grad = d_.Upload(Random(c), t, {c});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_BIAS_GRAD, {dout.get()}, {bias_grad.get()}, &p).ok());
      ExpectSame(*bias_grad, 1e-5, 1e-5);
    }
  }
}

// The sorted backward at a size with many ids: skewed ids (a third of the
// tokens share two ids, as frequent words do), a vocabulary past 2^10 so the
// sort uses several digits; the same bits on a second run.
TEST_F(CudaKernelsTest, EmbeddingBackwardManyIdsIsDeterministic) {
  for (MNT_DType t : kFloatTypes) {
    const int64_t vocab = 3001, c = 67, n = 4133;
    std::vector<int32_t> id(n);
    std::uniform_int_distribution<int32_t> any_id(0, vocab - 1);
    for (int64_t i = 0; i < n; ++i) {
      id[i] = i % 3 == 0 ? static_cast<int32_t>(i % 2 ? 17 : vocab - 1) : any_id(rng_);
    }
    auto ids = d_.UploadI32(id, {n});
    auto dout = d_.Upload(Random(n * c), t, {n, c});
    for (int accumulate : {0, 1}) {
      const std::vector<float> old = Random(vocab * c);
      auto dtable = d_.Upload(old, t, {vocab, c});
      const MNT_AccumulateParams p{MNT_AccumulateParams_STRUCT_SIZE, accumulate};
      ASSERT_TRUE(
          d_.RunBoth(MNT_OP_EMBEDDING_BACKWARD, {dout.get(), ids.get()}, {dtable.get()}, &p).ok());
      ExpectSame(*dtable, 1e-5, 1e-6);
      const std::vector<uint8_t> first = d_.Bytes(*dtable, true);
      auto again = d_.Upload(old, t, {vocab, c});
      ASSERT_TRUE(
          d_.RunCuda(MNT_OP_EMBEDDING_BACKWARD, {dout.get(), ids.get()}, {again.get()}, &p).ok());
      EXPECT_EQ(d_.Bytes(*again, true), first) << "accumulate " << accumulate;
    }
  }
}

TEST_F(CudaKernelsTest, ReductionsAreDeterministic) {
  for (MNT_DType t : kFloatTypes) {
    const int64_t n = 1000003;
    auto x = d_.Upload(Random(n), t, {n});
    auto x2 = d_.Upload(Random(77), t, {7, 11});
    for (MNT_ReduceKind kind : {MNT_REDUCE_SUM, MNT_REDUCE_MEAN, MNT_REDUCE_MAX}) {
      auto out = d_.Poisoned(MNT_DTYPE_F32, {1});
      const MNT_ReduceParams p{MNT_ReduceParams_STRUCT_SIZE, kind};
      ASSERT_TRUE(d_.RunBoth(MNT_OP_REDUCE, {x.get()}, {out.get()}, &p).ok());
      ExpectSame(*out, 1e-5, 1e-5);
    }
    auto norm = d_.Poisoned(MNT_DTYPE_F32, {1});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_GLOBAL_NORM_SQUARED, {x.get(), x2.get()}, {norm.get()}).ok());
    ExpectSame(*norm, 1e-6);
    const std::vector<uint8_t> first = d_.Bytes(*norm, true);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(d_.RunCuda(MNT_OP_GLOBAL_NORM_SQUARED, {x.get(), x2.get()}, {norm.get()}).ok());
      EXPECT_EQ(d_.Bytes(*norm, true), first) << "run-to-run difference";
    }
  }
}

TEST_F(CudaKernelsTest, NonfiniteCheckUnscale) {
  for (MNT_DType t : kFloatTypes) {
    for (bool poison : {false, true}) {
      std::vector<float> g = Random(999, 1000.0f);
      if (poison) g[517] = INFINITY;
      auto grad = d_.Upload(g, t, {999});
      auto inv = d_.Upload({1.0f / 1024}, MNT_DTYPE_F32, {1});
      auto found = d_.Upload({0.0f}, MNT_DTYPE_F32, {1});
      auto out = d_.Poisoned(MNT_DTYPE_F32, {999});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_NONFINITE_CHECK_UNSCALE, {inv.get(), grad.get()},
                             {found.get(), out.get()})
                      .ok());
      EXPECT_EQ(d_.Download(*found, true), std::vector<float>{poison ? 1.0f : 0.0f});
      EXPECT_EQ(d_.Download(*found, false), d_.Download(*found, true));
      EXPECT_EQ(d_.Bytes(*out, true), d_.Bytes(*out, false));  // one multiply each
    }
  }
}

TEST_F(CudaKernelsTest, OptimizerStepsWriteMasterAndWorkingCopy) {
  for (MNT_DType working_t : kFloatTypes) {
    for (float found : {-1.0f, 0.0f, 1.0f}) {  // -1: input absent
      const int64_t n = 1027;
      auto grad = d_.Upload(Random(n), MNT_DTYPE_BF16, {n});
      auto found_inf = d_.Upload({found}, MNT_DTYPE_F32, {1});
      auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
      auto master = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
      auto m = d_.Upload(Random(n, 0.1f), MNT_DTYPE_F32, {n});
      std::vector<float> vv = Random(n, 0.1f);
      for (float& e : vv) e = e * e;
      auto v = d_.Upload(vv, MNT_DTYPE_F32, {n});
      auto working = d_.Poisoned(working_t, {n});
      const std::vector<uint8_t> before = d_.Bytes(*master, true);
      const Pair* fi = found < 0 ? nullptr : found_inf.get();
      const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3};
      ASSERT_TRUE(d_.RunBoth(MNT_OP_ADAMW_STEP, {grad.get(), fi, mult.get()},
                             {master.get(), m.get(), v.get(), working.get()}, &ap)
                      .ok());
      if (found > 0) {
        EXPECT_EQ(d_.Bytes(*master, true), before) << "skipped step changed weights";
        continue;
      }
      ExpectSame(*master, 1e-6, 1e-7);
      ExpectSame(*m);
      ExpectSame(*v);
      ExpectSame(*working);
      const MNT_SgdParams sp{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1};
      ASSERT_TRUE(d_.RunBoth(MNT_OP_SGD_STEP, {grad.get(), fi, mult.get()},
                             {master.get(), m.get(), working.get()}, &sp)
                      .ok());
      ExpectSame(*master, 1e-6, 1e-7);
      ExpectSame(*m);
      ExpectSame(*working);
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

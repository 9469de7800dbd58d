// The CUDA hot path's caches, specialisations and vector loads change no
// result:
//  - kernels compiled per storage type (operands of one dtype) write the same
//    bits as the per-element dtype switch they replace, which still runs when
//    operands differ: the op with every operand in f16/bf16 must equal, bit
//    for bit, the op with an fp32 output rounded to f16/bf16 by CAST (both
//    round the same fp32 value once) -- elementwise, row, optimizer,
//    embedding and fallback attention kernels;
//  - kernels compiled per pair of storage types (an fp32 gradient with a
//    bf16 working copy, a bf16 gradient added into fp32, a 16-bit conv
//    output with a bias) write the bits of the all-fp32 op, rounded once;
//  - the optimizer steps' 16-byte loads: aligned buffers and misaligned
//    slices of the same values end with the same bits;
//  - cached GEMM plans: shapes interleaved and repeated (cache hits) and a
//    bias buffer swapped under the same plan key all match the CPU backend.
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::AllClose;
using testing::DualBackend;
using testing::Pair;
using testing::RoundedTo;
using testing::StorageTolerance;

constexpr MNT_DType kSixteenBit[] = {MNT_DTYPE_F16, MNT_DTYPE_BF16};

class CudaHotPathTest : public testing::DualBackendTest {
 protected:
  // `typed` (written by the specialised kernel) holds exactly the bits of
  // `wide` (fp32, written by the switching kernel) rounded to typed's dtype.
  void ExpectSameBitsAsRounded(const Pair& typed, const Pair& wide) {
    ASSERT_EQ(wide.dtype, MNT_DTYPE_F32);
    auto rounded = d_.Poisoned(typed.dtype, typed.dims);
    ASSERT_TRUE(d_.RunCuda(MNT_OP_CAST, {&wide}, {rounded.get()}).ok());
    const std::vector<uint8_t> got = d_.Bytes(typed, true), want = d_.Bytes(*rounded, true);
    ASSERT_EQ(got.size(), want.size());
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) differing += got[i] != want[i];
    EXPECT_EQ(differing, 0u) << "bytes differ between the specialised and switching kernels";
    // And neither is NaN-poison left unwritten.
    for (float v : d_.Download(wide, true)) ASSERT_FALSE(std::isnan(v));
  }

  // Two identical random optimizer states of n elements (master weights,
  // first and second moments) whose steps are compared: `_t` writes a
  // working copy in `t`, `_f` an fp32 one.
  struct TwinStates {
    std::unique_ptr<Pair> master_t, master_f, m_t, m_f, v_t, v_f, work_t, work_f;
  };
  TwinStates Twins(int64_t n, MNT_DType t) {
    const std::vector<float> w0 = Random(n), m0 = Random(n, 0.1f);
    std::vector<float> v0 = Random(n, 0.1f);
    for (float& e : v0) e = e * e;
    TwinStates s;
    s.master_t = d_.Upload(w0, MNT_DTYPE_F32, {n});
    s.master_f = d_.Upload(w0, MNT_DTYPE_F32, {n});
    s.m_t = d_.Upload(m0, MNT_DTYPE_F32, {n});
    s.m_f = d_.Upload(m0, MNT_DTYPE_F32, {n});
    s.v_t = d_.Upload(v0, MNT_DTYPE_F32, {n});
    s.v_f = d_.Upload(v0, MNT_DTYPE_F32, {n});
    s.work_t = d_.Poisoned(t, {n});
    s.work_f = d_.Poisoned(MNT_DTYPE_F32, {n});
    return s;
  }
};

TEST_F(CudaHotPathTest, ElementwiseSpecialisedMatchesSwitch) {
  for (MNT_DType t : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    const int64_t n = 4101;  // vector groups and a scalar tail
    auto a = d_.Upload(Random(n), t, {n});
    auto b = d_.Upload(Random(n), t, {n});
    const MNT_AddParams ap{MNT_AddParams_STRUCT_SIZE, 0.75f, -1.5f};
    auto out_t = d_.Poisoned(t, {n});
    auto out_f = d_.Poisoned(MNT_DTYPE_F32, {n});
    ASSERT_TRUE(d_.RunCuda(MNT_OP_ADD, {a.get(), b.get()}, {out_t.get()}, &ap).ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_ADD, {a.get(), b.get()}, {out_f.get()}, &ap).ok());
    ExpectSameBitsAsRounded(*out_t, *out_f);
    for (MNT_Activation act : {MNT_ACTIVATION_RELU, MNT_ACTIVATION_GELU_TANH}) {
      const MNT_ActivationParams p{MNT_ActivationParams_STRUCT_SIZE, act};
      auto y_t = d_.Poisoned(t, {n});
      auto y_f = d_.Poisoned(MNT_DTYPE_F32, {n});
      ASSERT_TRUE(d_.RunCuda(MNT_OP_ACTIVATION_FORWARD, {a.get()}, {y_t.get()}, &p).ok());
      ASSERT_TRUE(d_.RunCuda(MNT_OP_ACTIVATION_FORWARD, {a.get()}, {y_f.get()}, &p).ok());
      ExpectSameBitsAsRounded(*y_t, *y_f);
      auto dx_t = d_.Poisoned(t, {n});
      auto dx_f = d_.Poisoned(MNT_DTYPE_F32, {n});
      ASSERT_TRUE(
          d_.RunCuda(MNT_OP_ACTIVATION_BACKWARD, {a.get(), b.get()}, {dx_t.get()}, &p).ok());
      ASSERT_TRUE(
          d_.RunCuda(MNT_OP_ACTIVATION_BACKWARD, {a.get(), b.get()}, {dx_f.get()}, &p).ok());
      ExpectSameBitsAsRounded(*dx_t, *dx_f);
    }
  }
}

TEST_F(CudaHotPathTest, RowKernelsSpecialisedMatchSwitch) {
  for (MNT_DType t : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    auto x = d_.Upload(Random(7 * 1001, 4.0f), t, {7, 1001});
    auto y_t = d_.Poisoned(t, {7, 1001});
    auto y_f = d_.Poisoned(MNT_DTYPE_F32, {7, 1001});
    ASSERT_TRUE(d_.RunCuda(MNT_OP_SOFTMAX, {x.get()}, {y_t.get()}).ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_SOFTMAX, {x.get()}, {y_f.get()}).ok());
    ExpectSameBitsAsRounded(*y_t, *y_f);

    const int64_t batch = 23, width = 19, classes = 17;
    auto logits = d_.Upload(Random(batch * width, 3.0f), t, {batch, width});
    std::vector<int32_t> target(batch);
    for (int64_t r = 0; r < batch; ++r) target[r] = r % 7 == 3 ? -1 : (r * 5) % classes;
    auto targets = d_.UploadI32(target, {batch});
    const MNT_CrossEntropyParams cp{MNT_CrossEntropyParams_STRUCT_SIZE, 0.25f, classes};
    auto losses_t = d_.Poisoned(MNT_DTYPE_F32, {batch});
    auto losses_f = d_.Poisoned(MNT_DTYPE_F32, {batch});
    auto dl_t = d_.Poisoned(t, {batch, width});
    auto dl_f = d_.Poisoned(MNT_DTYPE_F32, {batch, width});
    ASSERT_TRUE(d_.RunCuda(MNT_OP_CROSS_ENTROPY, {logits.get(), targets.get()},
                           {losses_t.get(), dl_t.get()}, &cp)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_CROSS_ENTROPY, {logits.get(), targets.get()},
                           {losses_f.get(), dl_f.get()}, &cp)
                    .ok());
    EXPECT_EQ(d_.Bytes(*losses_t, true), d_.Bytes(*losses_f, true));
    ExpectSameBitsAsRounded(*dl_t, *dl_f);

    const int64_t rows = 13, c = 517;
    auto lx = d_.Upload(Random(rows * c, 2.0f), t, {rows, c});
    auto w = d_.Upload(Random(c), t, {c});
    auto bias = d_.Upload(Random(c), t, {c});
    auto ly_t = d_.Poisoned(t, {rows, c});
    auto ly_f = d_.Poisoned(MNT_DTYPE_F32, {rows, c});
    auto mean_t = d_.Poisoned(MNT_DTYPE_F32, {rows}), rstd_t = d_.Poisoned(MNT_DTYPE_F32, {rows});
    auto mean_f = d_.Poisoned(MNT_DTYPE_F32, {rows}), rstd_f = d_.Poisoned(MNT_DTYPE_F32, {rows});
    const MNT_LayerNormParams lp{MNT_LayerNormParams_STRUCT_SIZE, 1e-5f, 0};
    ASSERT_TRUE(d_.RunCuda(MNT_OP_LAYERNORM_FORWARD, {lx.get(), w.get(), bias.get()},
                           {ly_t.get(), mean_t.get(), rstd_t.get()}, &lp)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_LAYERNORM_FORWARD, {lx.get(), w.get(), bias.get()},
                           {ly_f.get(), mean_f.get(), rstd_f.get()}, &lp)
                    .ok());
    ExpectSameBitsAsRounded(*ly_t, *ly_f);
    EXPECT_EQ(d_.Bytes(*mean_t, true), d_.Bytes(*mean_f, true));
    EXPECT_EQ(d_.Bytes(*rstd_t, true), d_.Bytes(*rstd_f, true));

    auto dy = d_.Upload(Random(rows * c), t, {rows, c});
    auto dx_t = d_.Poisoned(t, {rows, c});
    auto dx_f = d_.Poisoned(MNT_DTYPE_F32, {rows, c});
    auto dw_t = d_.Poisoned(MNT_DTYPE_F32, {c}), db_t = d_.Poisoned(MNT_DTYPE_F32, {c});
    auto dw_f = d_.Poisoned(MNT_DTYPE_F32, {c}), db_f = d_.Poisoned(MNT_DTYPE_F32, {c});
    ASSERT_TRUE(d_.RunCuda(MNT_OP_LAYERNORM_BACKWARD,
                           {dy.get(), lx.get(), w.get(), mean_t.get(), rstd_t.get()},
                           {dx_t.get(), dw_t.get(), db_t.get()}, &lp)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_LAYERNORM_BACKWARD,
                           {dy.get(), lx.get(), w.get(), mean_t.get(), rstd_t.get()},
                           {dx_f.get(), dw_f.get(), db_f.get()}, &lp)
                    .ok());
    ExpectSameBitsAsRounded(*dx_t, *dx_f);
    EXPECT_EQ(d_.Bytes(*dw_t, true), d_.Bytes(*dw_f, true));
    EXPECT_EQ(d_.Bytes(*db_t, true), d_.Bytes(*db_f, true));
  }
}

TEST_F(CudaHotPathTest, OptimizerSpecialisedMatchesSwitch) {
  for (MNT_DType t : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    const int64_t n = 2053;
    auto grad = d_.Upload(Random(n), t, {n});
    auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
    // One state stepped with a working copy in t (the specialised kernel),
    // its twin with an fp32 working copy (the switch).
    auto [master_t, master_f, m_t, m_f, v_t, v_f, work_t, work_f] = Twins(n, t);
    const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 5};
    ASSERT_TRUE(d_.RunCuda(MNT_OP_ADAMW_STEP, {grad.get(), nullptr, mult.get()},
                           {master_t.get(), m_t.get(), v_t.get(), work_t.get()}, &ap)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_ADAMW_STEP, {grad.get(), nullptr, mult.get()},
                           {master_f.get(), m_f.get(), v_f.get(), work_f.get()}, &ap)
                    .ok());
    EXPECT_EQ(d_.Bytes(*master_t, true), d_.Bytes(*master_f, true));
    EXPECT_EQ(d_.Bytes(*m_t, true), d_.Bytes(*m_f, true));
    EXPECT_EQ(d_.Bytes(*v_t, true), d_.Bytes(*v_f, true));
    ExpectSameBitsAsRounded(*work_t, *work_f);

    const MNT_SgdParams sp{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1};
    ASSERT_TRUE(d_.RunCuda(MNT_OP_SGD_STEP, {grad.get(), nullptr, mult.get()},
                           {master_t.get(), m_t.get(), work_t.get()}, &sp)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_SGD_STEP, {grad.get(), nullptr, mult.get()},
                           {master_f.get(), m_f.get(), work_f.get()}, &sp)
                    .ok());
    EXPECT_EQ(d_.Bytes(*master_t, true), d_.Bytes(*master_f, true));
    EXPECT_EQ(d_.Bytes(*m_t, true), d_.Bytes(*m_f, true));
    ExpectSameBitsAsRounded(*work_t, *work_f);
  }
}

TEST_F(CudaHotPathTest, EmbeddingSpecialisedMatchesSwitch) {
  for (MNT_DType t : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    const int64_t vocab = 29, c = 37, n = 83;
    auto table = d_.Upload(Random(vocab * c), t, {vocab, c});
    std::vector<int32_t> id(n);
    for (int64_t i = 0; i < n; ++i) id[i] = static_cast<int32_t>((i * i + 5) % vocab);
    auto ids = d_.UploadI32(id, {n});
    auto out_t = d_.Poisoned(t, {n, c});
    auto out_f = d_.Poisoned(MNT_DTYPE_F32, {n, c});
    ASSERT_TRUE(d_.RunCuda(MNT_OP_EMBEDDING_FORWARD, {table.get(), ids.get()}, {out_t.get()}).ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_EMBEDDING_FORWARD, {table.get(), ids.get()}, {out_f.get()}).ok());
    ExpectSameBitsAsRounded(*out_t, *out_f);
    auto dout = d_.Upload(Random(n * c), t, {n, c});
    const std::vector<float> old = Random(vocab * c);
    auto dtable_t = d_.Upload(old, t, {vocab, c});
    auto dtable_f = d_.Upload(old, MNT_DTYPE_F32, {vocab, c});
    const MNT_AccumulateParams p{MNT_AccumulateParams_STRUCT_SIZE, 0};
    ASSERT_TRUE(
        d_.RunCuda(MNT_OP_EMBEDDING_BACKWARD, {dout.get(), ids.get()}, {dtable_t.get()}, &p).ok());
    ASSERT_TRUE(
        d_.RunCuda(MNT_OP_EMBEDDING_BACKWARD, {dout.get(), ids.get()}, {dtable_f.get()}, &p).ok());
    ExpectSameBitsAsRounded(*dtable_t, *dtable_f);
  }
}

// The fallback kernels (not cuDNN): forward y and backward dqkv in 16-bit
// storage against fp32 outputs rounded by CAST.
TEST_F(CudaHotPathTest, FallbackAttentionSpecialisedMatchesSwitch) {
  DualBackend fallback;
  fallback.Init("attention=fallback");
  const int64_t b = 2, t = 41, h = 2, dh = 16, c = h * dh;
  for (MNT_DType dt : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << dt);
    const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, int32_t(h), 1, 0.0f};
    auto qkv = fallback.Upload(Random(b * t * 3 * c), dt, {b, t, 3 * c});
    auto y_t = fallback.Poisoned(dt, {b, t, c});
    auto y_f = fallback.Poisoned(MNT_DTYPE_F32, {b, t, c});
    auto lse_t = fallback.Poisoned(MNT_DTYPE_F32, {b, h, t});
    auto lse_f = fallback.Poisoned(MNT_DTYPE_F32, {b, h, t});
    ASSERT_TRUE(
        fallback.RunCuda(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y_t.get(), lse_t.get()}, &p).ok());
    ASSERT_TRUE(
        fallback.RunCuda(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y_f.get(), lse_f.get()}, &p).ok());
    EXPECT_EQ(fallback.Bytes(*lse_t, true), fallback.Bytes(*lse_f, true));
    auto rounded = fallback.Poisoned(dt, {b, t, c});
    ASSERT_TRUE(fallback.RunCuda(MNT_OP_CAST, {y_f.get()}, {rounded.get()}).ok());
    EXPECT_EQ(fallback.Bytes(*y_t, true), fallback.Bytes(*rounded, true));

    // Backward from the same (16-bit) y: only dqkv's dtype differs.
    auto dy = fallback.Upload(Random(b * t * c), dt, {b, t, c});
    auto dqkv_t = fallback.Poisoned(dt, {b, t, 3 * c});
    auto dqkv_f = fallback.Poisoned(MNT_DTYPE_F32, {b, t, 3 * c});
    ASSERT_TRUE(fallback
                    .RunCuda(MNT_OP_ATTENTION_BACKWARD,
                             {dy.get(), qkv.get(), y_t.get(), lse_t.get()}, {dqkv_t.get()}, &p)
                    .ok());
    ASSERT_TRUE(fallback
                    .RunCuda(MNT_OP_ATTENTION_BACKWARD,
                             {dy.get(), qkv.get(), y_t.get(), lse_t.get()}, {dqkv_f.get()}, &p)
                    .ok());
    auto dq_rounded = fallback.Poisoned(dt, {b, t, 3 * c});
    ASSERT_TRUE(fallback.RunCuda(MNT_OP_CAST, {dqkv_f.get()}, {dq_rounded.get()}).ok());
    EXPECT_EQ(fallback.Bytes(*dqkv_t, true), fallback.Bytes(*dq_rounded, true));
    for (float v : fallback.Download(*dqkv_f, true)) ASSERT_FALSE(std::isnan(v));
  }
}

// ADD with one operand in another dtype (the trainer's master-gradient
// accumulation: bf16 gradient + fp32 sum -> fp32), on either side: the same
// bits as the all-fp32 ADD of the same values (a 16-bit value widens
// exactly), with the vector loads (4101: groups and a tail).
TEST_F(CudaHotPathTest, AddWithOneOperandInAnotherDtypeMatchesFp32) {
  const int64_t n = 4101;
  const MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, 0.75f, -1.5f};
  for (MNT_DType t : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    const std::vector<float> narrow = RoundedTo(Random(n), t), wide = Random(n);
    auto a16 = d_.Upload(narrow, t, {n});
    auto a32 = d_.Upload(narrow, MNT_DTYPE_F32, {n});
    auto b32 = d_.Upload(wide, MNT_DTYPE_F32, {n});
    for (bool sixteen_first : {true, false}) {
      const Pair* x = sixteen_first ? a16.get() : b32.get();
      const Pair* y = sixteen_first ? b32.get() : a16.get();
      const Pair* x_ref = sixteen_first ? a32.get() : b32.get();
      const Pair* y_ref = sixteen_first ? b32.get() : a32.get();
      auto out = d_.Poisoned(MNT_DTYPE_F32, {n});
      auto ref = d_.Poisoned(MNT_DTYPE_F32, {n});
      ASSERT_TRUE(d_.RunBoth(MNT_OP_ADD, {x, y}, {out.get()}, &p).ok());
      ASSERT_TRUE(d_.RunCuda(MNT_OP_ADD, {x_ref, y_ref}, {ref.get()}, &p).ok());
      EXPECT_EQ(d_.Bytes(*out, true), d_.Bytes(*ref, true)) << "16-bit first " << sixteen_first;
      EXPECT_TRUE(AllClose(d_.Download(*out, true), d_.Download(*out, false), 1e-6, 1e-6));
    }
  }
}

// The optimizer with an fp32 (master) gradient and a 16-bit working copy --
// every mixed-precision step -- runs the (F32, 16-bit) pair: master and
// state bits as with an fp32 working copy, the copy that fp32 value rounded
// once; and the CPU backend agrees.
TEST_F(CudaHotPathTest, OptimizerWithFp32GradAndSixteenBitCopyMatchesFp32Copy) {
  const int64_t n = 2053;
  for (MNT_DType t : kSixteenBit) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    auto grad = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
    auto [master_t, master_f, m_t, m_f, v_t, v_f, work_t, work_f] = Twins(n, t);
    const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3};
    ASSERT_TRUE(d_.RunBoth(MNT_OP_ADAMW_STEP, {grad.get()},
                           {master_t.get(), m_t.get(), v_t.get(), work_t.get()}, &ap)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_ADAMW_STEP, {grad.get()},
                           {master_f.get(), m_f.get(), v_f.get(), work_f.get()}, &ap)
                    .ok());
    EXPECT_EQ(d_.Bytes(*master_t, true), d_.Bytes(*master_f, true));
    EXPECT_EQ(d_.Bytes(*m_t, true), d_.Bytes(*m_f, true));
    EXPECT_EQ(d_.Bytes(*v_t, true), d_.Bytes(*v_f, true));
    ExpectSameBitsAsRounded(*work_t, *work_f);
    EXPECT_TRUE(AllClose(d_.Download(*master_t, true), d_.Download(*master_t, false), 1e-6,
                         1e-7));
    EXPECT_TRUE(AllClose(d_.Download(*work_t, true), d_.Download(*work_t, false),
                         StorageTolerance(t), 1e-6));
  }
}

// A 16-bit convolution output with a bias holds the fp32 result (bias
// included) rounded once: the same bits as the fp32-output convolution
// rounded by CAST -- never cuDNN's 16-bit result rounded again after the
// bias add.
TEST_F(CudaHotPathTest, SixteenBitConvWithBiasRoundsOnce) {
  const int64_t n = 2, c = 8, h = 9, w = 9, k = 16, r = 3;
  for (MNT_DType t : kSixteenBit) {
    const MNT_ComputeMode mode = t == MNT_DTYPE_BF16 ? MNT_COMPUTE_BF16 : MNT_COMPUTE_F16;
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    auto x = d_.Upload(Random(n * c * h * w), t, {n, c, h, w});
    auto wt = d_.Upload(Random(k * c * r * r, 0.2f), t, {k, c, r, r});
    auto bias = d_.Upload(Random(k), MNT_DTYPE_F32, {k});
    const MNT_Conv2dParams p{MNT_Conv2dParams_STRUCT_SIZE, 1, 1, 1, 1, 1, 1, 1, mode, 0};
    auto y_t = d_.Poisoned(t, {n, k, h, w});
    auto y_f = d_.Poisoned(MNT_DTYPE_F32, {n, k, h, w});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_CONV2D_FORWARD, {x.get(), wt.get(), bias.get()}, {y_t.get()},
                           &p)
                    .ok());
    ASSERT_TRUE(d_.RunCuda(MNT_OP_CONV2D_FORWARD, {x.get(), wt.get(), bias.get()}, {y_f.get()},
                           &p)
                    .ok());
    ExpectSameBitsAsRounded(*y_t, *y_f);
    EXPECT_TRUE(
        AllClose(d_.Download(*y_t, true), d_.Download(*y_t, false), StorageTolerance(t), 1e-2));
  }
}

// The step kernels read 4 elements at a time with 16-byte loads when every
// buffer is aligned and element by element otherwise: the same state run
// once on aligned buffers and once on slices one element in (misaligned)
// must end with the same bits, tails included.
TEST_F(CudaHotPathTest, OptimizerVectorisedMatchesScalar) {
  for (MNT_DType t : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    SCOPED_TRACE(::testing::Message() << "dtype " << t);
    const int64_t n = 1030;  // not a multiple of 4
    const std::vector<float> g0 = Random(n + 1), w0 = Random(n + 1), m0 = Random(n + 1, 0.1f);
    std::vector<float> v0 = Random(n + 1, 0.1f);
    for (float& e : v0) e = e * e;
    // Aligned run: elements [1, n] copied to the start of fresh buffers.
    auto tail = [](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + 1, v.end());
    };
    auto grad_a = d_.Upload(tail(g0), t, {n});
    auto master_a = d_.Upload(tail(w0), MNT_DTYPE_F32, {n});
    auto m_a = d_.Upload(tail(m0), MNT_DTYPE_F32, {n});
    auto v_a = d_.Upload(tail(v0), MNT_DTYPE_F32, {n});
    auto work_a = d_.Poisoned(t, {n});
    // Misaligned run: the same elements as slices starting at element 1.
    auto grad_u = d_.Upload(g0, t, {n + 1});
    auto master_u = d_.Upload(w0, MNT_DTYPE_F32, {n + 1});
    auto m_u = d_.Upload(m0, MNT_DTYPE_F32, {n + 1});
    auto v_u = d_.Upload(v0, MNT_DTYPE_F32, {n + 1});
    auto work_u = d_.Poisoned(t, {n + 1});
    auto slice = [n](const Pair& p) {
      MNT_Tensor s = p.cuda();
      s.data = static_cast<char*>(s.data) + (p.dtype == MNT_DTYPE_F32 ? 4 : 2);
      s.dims[0] = n;
      return s;
    };
    const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 2};
    const MNT_SgdParams sp{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1};
    ASSERT_TRUE(d_.cuda()
                    .Run(MNT_OP_ADAMW_STEP, {grad_a->cuda()},
                         {master_a->cuda(), m_a->cuda(), v_a->cuda(), work_a->cuda()}, &ap)
                    .ok());
    ASSERT_TRUE(d_.cuda()
                    .Run(MNT_OP_SGD_STEP, {grad_a->cuda()},
                         {master_a->cuda(), m_a->cuda(), work_a->cuda()}, &sp)
                    .ok());
    ASSERT_TRUE(d_.cuda()
                    .Run(MNT_OP_ADAMW_STEP, {slice(*grad_u)},
                         {slice(*master_u), slice(*m_u), slice(*v_u), slice(*work_u)}, &ap)
                    .ok());
    ASSERT_TRUE(d_.cuda()
                    .Run(MNT_OP_SGD_STEP, {slice(*grad_u)},
                         {slice(*master_u), slice(*m_u), slice(*work_u)}, &sp)
                    .ok());
    auto bytes_from_1 = [&](const Pair& p) {
      std::vector<uint8_t> b = d_.Bytes(p, true);
      b.erase(b.begin(), b.begin() + (p.dtype == MNT_DTYPE_F32 ? 4 : 2));
      return b;
    };
    EXPECT_EQ(d_.Bytes(*master_a, true), bytes_from_1(*master_u));
    EXPECT_EQ(d_.Bytes(*m_a, true), bytes_from_1(*m_u));
    EXPECT_EQ(d_.Bytes(*v_a, true), bytes_from_1(*v_u));
    EXPECT_EQ(d_.Bytes(*work_a, true), bytes_from_1(*work_u));
    for (float e : d_.Download(*master_a, true)) ASSERT_TRUE(std::isfinite(e));
  }
}

// Shapes interleaved and each run several times (the first call builds the
// plan, the rest reuse it), against the CPU backend every time.
TEST_F(CudaHotPathTest, CachedGemmPlansMatchCpuAcrossRepeatsAndShapes) {
  struct Shape {
    int64_t m, n, k;
    int ta, tb;
  };
  const Shape shapes[] = {{33, 17, 65, 0, 0},
                          {64, 128, 32, 1, 0},
                          {5, 7, 3, 0, 1},
                          {33, 17, 65, 1, 1},
                          {128, 64, 96, 0, 0}};
  for (MNT_ComputeMode mode : {MNT_COMPUTE_F32, MNT_COMPUTE_TF32, MNT_COMPUTE_BF16}) {
    SCOPED_TRACE(::testing::Message() << "mode " << mode);
    for (int round = 0; round < 3; ++round) {
      for (const Shape& s : shapes) {
        auto a = d_.Upload(Random(s.m * s.k), MNT_DTYPE_F32,
                           s.ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k});
        auto b = d_.Upload(Random(s.k * s.n), MNT_DTYPE_F32,
                           s.tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n});
        auto bias = d_.Upload(Random(s.n), MNT_DTYPE_F32, {s.n});
        auto c = d_.Poisoned(MNT_DTYPE_F32, {s.m, s.n});
        const MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, s.ta, s.tb, 1.0f, 0.0f, mode};
        ASSERT_TRUE(d_.RunBoth(MNT_OP_GEMM, {a.get(), b.get(), bias.get()}, {c.get()}, &p).ok());
        // |x| ~ N(0,1), K <= 96: 2e-2 relative with a 0.05 floor covers bf16.
        const double rtol = mode == MNT_COMPUTE_F32 ? 1e-5 : 2e-2;
        const double atol = mode == MNT_COMPUTE_F32 ? 1e-4 : 0.05;
        EXPECT_TRUE(AllClose(d_.Download(*c, true), d_.Download(*c, false), rtol, atol))
            << s.m << "x" << s.n << "x" << s.k << " round " << round;
      }
    }
  }
}

// The bias pointer is the one attribute set per call: two bias buffers of
// the same alignment share a plan, and each call must add its own.
TEST_F(CudaHotPathTest, CachedGemmPlanTakesEachCallsBias) {
  const int64_t m = 16, n = 32, k = 8;
  auto a = d_.Upload(Random(m * k), MNT_DTYPE_F32, {m, k});
  auto b = d_.Upload(Random(k * n), MNT_DTYPE_F32, {k, n});
  const MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
  // All three buffers alive at once, so each call has its own address.
  std::vector<std::unique_ptr<Pair>> biases;
  for (int i = 0; i < 3; ++i) {
    biases.push_back(d_.Upload(std::vector<float>(n, 100.0f * (i + 1)), MNT_DTYPE_F32, {n}));
  }
  for (int i = 0; i < 3; ++i) {  // values far apart: a stale bias shows
    auto c = d_.Poisoned(MNT_DTYPE_F32, {m, n});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_GEMM, {a.get(), b.get(), biases[i].get()}, {c.get()}, &p).ok());
    EXPECT_TRUE(AllClose(d_.Download(*c, true), d_.Download(*c, false), 1e-5, 1e-4)) << i;
  }
  // And the plan without a bias after plans with one (different key).
  auto c = d_.Poisoned(MNT_DTYPE_F32, {m, n});
  ASSERT_TRUE(d_.RunBoth(MNT_OP_GEMM, {a.get(), b.get()}, {c.get()}, &p).ok());
  EXPECT_TRUE(AllClose(d_.Download(*c, true), d_.Download(*c, false), 1e-5, 1e-4));
}

}  // namespace
}  // namespace mnt::cuda

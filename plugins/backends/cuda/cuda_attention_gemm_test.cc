// fp32 attention through cuBLASLt GEMMs (attention=gemm, attention_gemm.cu)
// against the CPU reference backend and the fallback kernels
// (attention=fallback): forward (y, lse) and backward (dqkv), fresh random
// inputs (seed printed), outputs poisoned with NaN first (NaN never passes).
// Shapes: T below, at and past the 256-row causal block (37, 300, 513: one,
// two and three blocks, the last one 44 rows or 1), D = 64, 32 and 16,
// causal and full, default and explicit scale.
// Tolerances, normwise (|got - want| <= tol * max |want|):
//   fp32 (CUBLAS_COMPUTE_32F): 1e-5 for y, lse and dqkv (the CPU replay of
//     the same plan, attention_gemm_plan_test, is within 3e-6 of float64);
//   tf32 (attention_tf32=on, CUBLAS_COMPUTE_32F_FAST_TF32): y and dqkv
//     1e-2, lse 3e-3 (the replay with operands cut to TF32, rounded or
//     truncated, stays within those bounds; measured up to 2.7e-3 and 6e-4).
// Skips without a device.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::AllClose;
using testing::DualBackend;
using testing::Pair;

struct Shape {
  int64_t b, h, t, d;
  int causal;
  float scale;
};

constexpr Shape kShapes[] = {
    {2, 3, 37, 64, 1, 0.0f},   // one block, GPT-2's D
    {1, 4, 300, 32, 1, 0.2f},  // causal blocks of 256 and 44 rows, explicit scale
    {2, 2, 300, 64, 0, 0.0f},  // full attention: one block of the whole sequence
    {1, 2, 513, 16, 1, 0.0f},  // three causal blocks, the last one row
    {3, 1, 1, 8, 1, 0.0f},     // one position: a single visible key
};

struct Tolerances {
  double y, lse, dqkv;
};
constexpr Tolerances kFp32{1e-5, 1e-5, 1e-5};
constexpr Tolerances kTf32{1e-2, 3e-3, 1e-2};

// One call's tensors on a DualBackend, forward then backward run on both
// of its backends (the backward reads each side's own forward outputs).
struct AttentionRun {
  std::unique_ptr<Pair> qkv, y, lse, dy, dqkv;
};

class CudaAttentionGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MNT_SKIP_WITHOUT_GPU();
    rng_.seed(testing::FreshSeed());
    gemm_.Init("attention=gemm");
    tf32_.Init("attention=gemm,attention_tf32=on");
    fallback_.Init("attention=fallback");
  }
  std::vector<float> Random(int64_t n) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& e : v) e = dist(rng_);
    return v;
  }
  static MNT_AttentionParams Params(const Shape& sh, MNT_ComputeMode compute) {
    return MNT_AttentionParams{MNT_AttentionParams_STRUCT_SIZE, int32_t(sh.h), sh.causal,
                               sh.scale, compute};
  }
  static AttentionRun Attention(DualBackend& d, const Shape& sh, const std::vector<float>& qkv,
                                const std::vector<float>& dy,
                                MNT_DType y_dtype = MNT_DTYPE_F32,
                                MNT_ComputeMode compute = MNT_COMPUTE_F32) {
    const int64_t c = sh.h * sh.d;
    const MNT_AttentionParams p = Params(sh, compute);
    AttentionRun r;
    r.qkv = d.Upload(qkv, MNT_DTYPE_F32, {sh.b, sh.t, 3 * c});
    r.dy = d.Upload(dy, MNT_DTYPE_F32, {sh.b, sh.t, c});
    r.y = d.Poisoned(y_dtype, {sh.b, sh.t, c});
    r.lse = d.Poisoned(MNT_DTYPE_F32, {sh.b, sh.h, sh.t});
    r.dqkv = d.Poisoned(MNT_DTYPE_F32, {sh.b, sh.t, 3 * c});
    const sdk::Status fwd =
        d.RunBoth(MNT_OP_ATTENTION_FORWARD, {r.qkv.get()}, {r.y.get(), r.lse.get()}, &p);
    EXPECT_TRUE(fwd.ok()) << fwd.message();
    const sdk::Status bwd =
        d.RunBoth(MNT_OP_ATTENTION_BACKWARD, {r.dy.get(), r.qkv.get(), r.y.get(), r.lse.get()},
                  {r.dqkv.get()}, &p);
    EXPECT_TRUE(bwd.ok()) << bwd.message();
    return r;
  }
  // got vs want, normwise: atol = tol * max |want|.
  static ::testing::AssertionResult Close(const std::vector<float>& got,
                                          const std::vector<float>& want, double tol) {
    double scale = 0;
    for (float v : want) scale = std::max(scale, double(std::fabs(v)));
    return AllClose(got, want, 0.0, tol * scale);
  }
  // The cuda sides of two runs hold the same bytes (y, lse, dqkv).
  static void ExpectSameCudaBits(DualBackend& da, const AttentionRun& a, DualBackend& db,
                                 const AttentionRun& b) {
    EXPECT_EQ(da.Bytes(*a.y, true), db.Bytes(*b.y, true)) << "y";
    EXPECT_EQ(da.Bytes(*a.lse, true), db.Bytes(*b.lse, true)) << "lse";
    EXPECT_EQ(da.Bytes(*a.dqkv, true), db.Bytes(*b.dqkv, true)) << "dqkv";
  }
  // The cuda side of `d`'s run against its CPU side and the fallback's.
  void ExpectMatches(DualBackend& d, const AttentionRun& r, const AttentionRun& fb,
                     const Tolerances& tol) {
    const auto cuda = [&](const Pair& t) { return d.Download(t, true); };
    const auto cpu = [&](const Pair& t) { return d.Download(t, false); };
    const auto fallback = [&](const Pair& t) { return fallback_.Download(t, true); };
    EXPECT_TRUE(Close(cuda(*r.y), cpu(*r.y), tol.y)) << "y: gemm vs cpu";
    EXPECT_TRUE(Close(cuda(*r.lse), cpu(*r.lse), tol.lse)) << "lse: gemm vs cpu";
    EXPECT_TRUE(Close(cuda(*r.dqkv), cpu(*r.dqkv), tol.dqkv)) << "dqkv: gemm vs cpu";
    EXPECT_TRUE(Close(cuda(*r.y), fallback(*fb.y), tol.y)) << "y: gemm vs fallback";
    EXPECT_TRUE(Close(cuda(*r.lse), fallback(*fb.lse), tol.lse)) << "lse: gemm vs fallback";
    EXPECT_TRUE(Close(cuda(*r.dqkv), fallback(*fb.dqkv), tol.dqkv)) << "dqkv: gemm vs fallback";
  }

  std::mt19937 rng_;
  DualBackend gemm_, tf32_, fallback_;
};

TEST_F(CudaAttentionGemmTest, Fp32AndTf32MatchCpuAndFallback) {
  for (const Shape& sh : kShapes) {
    SCOPED_TRACE(::testing::Message() << "B=" << sh.b << " H=" << sh.h << " T=" << sh.t
                                      << " D=" << sh.d << " causal=" << sh.causal
                                      << " scale=" << sh.scale);
    const int64_t c = sh.h * sh.d;
    const std::vector<float> qkv = Random(sh.b * sh.t * 3 * c), dy = Random(sh.b * sh.t * c);
    const AttentionRun fb = Attention(fallback_, sh, qkv, dy);
    const AttentionRun fp32 = Attention(gemm_, sh, qkv, dy);
    const AttentionRun tf32 = Attention(tf32_, sh, qkv, dy);
    {
      SCOPED_TRACE("fp32");
      ExpectMatches(gemm_, fp32, fb, kFp32);
    }
    {
      SCOPED_TRACE("tf32");
      ExpectMatches(tf32_, tf32, fb, kTf32);
    }
    // attention_tf32=on reaches cuBLASLt: TF32 products differ from fp32
    // ones (by ~1e-4 of the largest element; equal bits would mean plain
    // fp32 ran). D = 8 at T = 1 has too few products to be sure of it.
    if (sh.t > 1) {
      EXPECT_FALSE(Close(tf32_.Download(*tf32.dqkv, true), gemm_.Download(*fp32.dqkv, true),
                         1e-7))
          << "attention_tf32=on gave the fp32 path's dqkv";
    }
  }
}

// ABI 1.8: a call asking for TF32 (MNT_AttentionParams.compute, as GPT-2
// passes it under --precision=tf32) runs the TF32 products without the
// backend option, with the option's bits, and the CPU backend (which rounds
// the same operands) agrees to TF32's tolerance.
TEST_F(CudaAttentionGemmTest, Tf32PerCallMatchesTheOptionAndTheCpu) {
  const Shape sh{2, 3, 300, 64, 1, 0.0f};
  const int64_t c = sh.h * sh.d;
  const std::vector<float> qkv = Random(sh.b * sh.t * 3 * c), dy = Random(sh.b * sh.t * c);
  const AttentionRun per_call = Attention(gemm_, sh, qkv, dy, MNT_DTYPE_F32, MNT_COMPUTE_TF32);
  const AttentionRun option = Attention(tf32_, sh, qkv, dy);
  ExpectSameCudaBits(gemm_, per_call, tf32_, option);
  const AttentionRun fb = Attention(fallback_, sh, qkv, dy);
  ExpectMatches(gemm_, per_call, fb, kTf32);
}

// Same inputs, same bits: the algorithm is cached per configuration and the
// row kernels reduce in a fixed order.
TEST_F(CudaAttentionGemmTest, SameBitsRunToRun) {
  const Shape sh{2, 3, 300, 64, 1, 0.0f};
  const int64_t c = sh.h * sh.d;
  const std::vector<float> qkv = Random(sh.b * sh.t * 3 * c), dy = Random(sh.b * sh.t * c);
  const AttentionRun first = Attention(gemm_, sh, qkv, dy);
  const AttentionRun second = Attention(gemm_, sh, qkv, dy);
  ExpectSameCudaBits(gemm_, first, gemm_, second);
}

// Mixed storage (fp32 qkv, bf16 y) is for the fallback kernels even with
// attention=gemm: no error, the CPU's results (bf16's tolerance for y, and
// for dqkv, which each side computes from its own rounded y).
TEST_F(CudaAttentionGemmTest, MixedDtypesRunTheFallback) {
  const Shape sh{1, 2, 45, 32, 1, 0.0f};
  const int64_t c = sh.h * sh.d;
  const AttentionRun r = Attention(gemm_, sh, Random(sh.b * sh.t * 3 * c), Random(sh.b * sh.t * c),
                          MNT_DTYPE_BF16);
  EXPECT_TRUE(Close(gemm_.Download(*r.y, true), gemm_.Download(*r.y, false), 1e-2));
  EXPECT_TRUE(Close(gemm_.Download(*r.lse, true), gemm_.Download(*r.lse, false), 1e-5));
  EXPECT_TRUE(Close(gemm_.Download(*r.dqkv, true), gemm_.Download(*r.dqkv, false), 1e-2));
}

// The default (auto) takes the GEMM path for fp32 too: its results are the
// GEMM path's bits.
TEST_F(CudaAttentionGemmTest, AutoRunsTheGemmPathForFp32) {
  DualBackend automatic;
  automatic.Init(nullptr);
  const Shape sh{1, 3, 77, 32, 1, 0.0f};
  const int64_t c = sh.h * sh.d;
  const std::vector<float> qkv = Random(sh.b * sh.t * 3 * c), dy = Random(sh.b * sh.t * c);
  const AttentionRun a = Attention(automatic, sh, qkv, dy);
  const AttentionRun g = Attention(gemm_, sh, qkv, dy);
  ExpectSameCudaBits(automatic, a, gemm_, g);
}

}  // namespace
}  // namespace mnt::cuda

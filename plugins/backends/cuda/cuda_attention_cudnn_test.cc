// cuDNN SDPA (attention=cudnn) against the fallback kernels
// (attention=fallback) and the CPU reference backend, forward (y, lse) and
// backward (dqkv), bf16 and fp16 storage, fresh random inputs (seed
// printed), outputs poisoned with NaN first (NaN never passes AllClose).
// Shapes: T not a multiple of 64 (37, 100) and 64, D = 64 and 32, causal and
// full attention, default and explicit scale.
// Tolerances are normwise (|got - want| <= tol * (|want| + max|want|)),
// because cuDNN feeds the probabilities P and the score gradients dS to its
// tensor-core matmuls in the storage type (the fallback and the CPU keep
// them in fp32/fp64):
//   y     bf16 2e-2, fp16 5e-3 (P rounded to 8 / 11 bits, averaged over T);
//   lse   1e-3 (fp32 output from the same 16-bit q, k, fp32 accumulation);
//   dqkv  bf16 3e-2, fp16 1e-2 (P and dS rounded, sums over T).
// Skips without a device, and with a message when the device or the loaded
// cuDNN cannot run SDPA (sm_80+, cuDNN 9+).
#include <cudnn.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

std::string SdpaUnsupportedReason() {
  if (cudnnGetVersion() < 90000) {
    return "loaded cuDNN " + std::to_string(cudnnGetVersion()) + " < 9.0";
  }
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess) {
    return "compute capability unreadable";
  }
  return major < 8 ? "device older than sm_80" : "";
}

struct Shape {
  int64_t b, h, t, d;
  int causal;
  float scale;
};

class CudaAttentionCudnnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MNT_SKIP_WITHOUT_GPU();
    const std::string why = SdpaUnsupportedReason();
    if (!why.empty()) {
      // The device check sets MANTISSA_REQUIRE_CUDNN=1 where it found
      // libcudnn: there, cuDNN that cannot run SDPA is a failure.
      const char* require = std::getenv("MANTISSA_REQUIRE_CUDNN");
      if (require != nullptr && std::string(require) == "1") {
        GTEST_FAIL() << "cuDNN SDPA unavailable although MANTISSA_REQUIRE_CUDNN=1: " << why;
      }
      std::printf("SKIPPED: cuDNN SDPA unavailable (%s)\n", why.c_str());
      GTEST_SKIP() << "cuDNN SDPA unavailable (" << why << ")";
    }
    rng_.seed(testing::FreshSeed());
    cudnn_.Init("attention=cudnn");
    fallback_.Init("attention=fallback");
  }
  std::vector<float> Random(int64_t n) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& e : v) e = dist(rng_);
    return v;
  }
  // got vs want, normwise: atol = tol * max |want|.
  static ::testing::AssertionResult Close(const std::vector<float>& got,
                                          const std::vector<float>& want, double tol) {
    double scale = 0;
    for (float v : want) scale = std::max(scale, double(std::fabs(v)));
    return AllClose(got, want, tol, tol * scale);
  }
  std::mt19937 rng_;
  DualBackend cudnn_, fallback_;
};

TEST_F(CudaAttentionCudnnTest, ForwardAndBackwardMatchFallbackAndCpu) {
  const Shape shapes[] = {
      {2, 3, 37, 64, 1, 0.0f},   // odd T, GPT-2's D
      {1, 4, 100, 32, 1, 0.2f},  // T % 64 != 0, D = 32, explicit scale
      {2, 2, 64, 32, 0, 0.0f},   // full (non-causal) attention
  };
  for (MNT_DType dt : {MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
    const bool bf16 = dt == MNT_DTYPE_BF16;
    const double y_tol = bf16 ? 2e-2 : 5e-3, lse_tol = 1e-3, dqkv_tol = bf16 ? 3e-2 : 1e-2;
    for (const Shape& sh : shapes) {
      SCOPED_TRACE(::testing::Message()
                   << (bf16 ? "bf16" : "fp16") << " B=" << sh.b << " H=" << sh.h
                   << " T=" << sh.t << " D=" << sh.d << " causal=" << sh.causal
                   << " scale=" << sh.scale);
      const int64_t c = sh.h * sh.d;
      const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, int32_t(sh.h), sh.causal,
                                  sh.scale};
      const std::vector<float> qkv_v = Random(sh.b * sh.t * 3 * c);
      const std::vector<float> dy_v = Random(sh.b * sh.t * c);
      // One set of tensors per DualBackend (cudnn side + cpu, fallback side + cpu).
      struct Run {
        std::unique_ptr<Pair> qkv, y, lse, dy, dqkv;
      } r[2];
      DualBackend* d[2] = {&cudnn_, &fallback_};
      for (int i = 0; i < 2; ++i) {
        r[i].qkv = d[i]->Upload(qkv_v, dt, {sh.b, sh.t, 3 * c});
        r[i].dy = d[i]->Upload(dy_v, dt, {sh.b, sh.t, c});
        r[i].y = d[i]->Poisoned(dt, {sh.b, sh.t, c});
        r[i].lse = d[i]->Poisoned(MNT_DTYPE_F32, {sh.b, sh.h, sh.t});
        r[i].dqkv = d[i]->Poisoned(dt, {sh.b, sh.t, 3 * c});
        const sdk::Status fwd = d[i]->RunBoth(MNT_OP_ATTENTION_FORWARD, {r[i].qkv.get()},
                                              {r[i].y.get(), r[i].lse.get()}, &p);
        ASSERT_TRUE(fwd.ok()) << fwd.message();
        // Each side reads its own forward's y and lse.
        const sdk::Status bwd = d[i]->RunBoth(
            MNT_OP_ATTENTION_BACKWARD,
            {r[i].dy.get(), r[i].qkv.get(), r[i].y.get(), r[i].lse.get()}, {r[i].dqkv.get()},
            &p);
        ASSERT_TRUE(bwd.ok()) << bwd.message();
      }
      const auto cudnn = [&](const Pair& t) { return cudnn_.Download(t, true); };
      const auto cpu = [&](const Pair& t) { return cudnn_.Download(t, false); };
      const auto fallback = [&](const Pair& t) { return fallback_.Download(t, true); };
      EXPECT_TRUE(Close(cudnn(*r[0].y), cpu(*r[0].y), y_tol)) << "y: cudnn vs cpu";
      EXPECT_TRUE(Close(cudnn(*r[0].y), fallback(*r[1].y), y_tol)) << "y: cudnn vs fallback";
      EXPECT_TRUE(Close(cudnn(*r[0].lse), cpu(*r[0].lse), lse_tol)) << "lse: cudnn vs cpu";
      EXPECT_TRUE(Close(cudnn(*r[0].lse), fallback(*r[1].lse), lse_tol))
          << "lse: cudnn vs fallback";
      EXPECT_TRUE(Close(cudnn(*r[0].dqkv), cpu(*r[0].dqkv), dqkv_tol)) << "dqkv: cudnn vs cpu";
      EXPECT_TRUE(Close(cudnn(*r[0].dqkv), fallback(*r[1].dqkv), dqkv_tol))
          << "dqkv: cudnn vs fallback";
      // The fallback itself against the CPU, at the same tolerances (a
      // sanity anchor for the three-way comparison).
      EXPECT_TRUE(Close(fallback(*r[1].y), fallback_.Download(*r[1].y, false), y_tol));
      EXPECT_TRUE(
          Close(fallback(*r[1].dqkv), fallback_.Download(*r[1].dqkv, false), dqkv_tol));
    }
  }
}

// cuDNN's lse must be what the fallback backward expects: a cuDNN forward
// followed by the fallback backward (auto mode mixes them when only one
// plan builds) matches the CPU.
TEST_F(CudaAttentionCudnnTest, CudnnLseFeedsTheFallbackBackward) {
  const int64_t b = 2, h = 2, t = 45, d = 32, c = h * d;
  const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, int32_t(h), 1, 0.0f};
  const MNT_DType dt = MNT_DTYPE_F16;
  const std::vector<float> qkv_v = Random(b * t * 3 * c), dy_v = Random(b * t * c);
  auto qkv = cudnn_.Upload(qkv_v, dt, {b, t, 3 * c});
  auto y = cudnn_.Poisoned(dt, {b, t, c});
  auto lse = cudnn_.Poisoned(MNT_DTYPE_F32, {b, h, t});
  ASSERT_TRUE(
      cudnn_.RunBoth(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y.get(), lse.get()}, &p).ok());
  // Move the cuDNN outputs into the fallback backend and run its backward.
  const std::vector<float> y_cudnn = cudnn_.Download(*y, true);
  const std::vector<float> lse_cudnn = cudnn_.Download(*lse, true);
  auto qkv_f = fallback_.Upload(qkv_v, dt, {b, t, 3 * c});
  auto y_f = fallback_.Upload(y_cudnn, dt, {b, t, c});
  auto lse_f = fallback_.Upload(lse_cudnn, MNT_DTYPE_F32, {b, h, t});
  auto dy_f = fallback_.Upload(dy_v, dt, {b, t, c});
  auto dqkv_f = fallback_.Poisoned(dt, {b, t, 3 * c});
  ASSERT_TRUE(fallback_
                  .RunBoth(MNT_OP_ATTENTION_BACKWARD,
                           {dy_f.get(), qkv_f.get(), y_f.get(), lse_f.get()}, {dqkv_f.get()},
                           &p)
                  .ok());
  // Both sides read the same (cuDNN-made) y and lse: fp16 tolerance.
  EXPECT_TRUE(Close(fallback_.Download(*dqkv_f, true), fallback_.Download(*dqkv_f, false),
                    1e-2));
}

TEST_F(CudaAttentionCudnnTest, ForcedCudnnRefusesWhatItCannotRunInOneLine) {
  // D = 12 is not a multiple of 8: an error with attention=cudnn ...
  const int64_t b = 1, h = 2, t = 9, d = 12, c = h * d;
  const MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, int32_t(h), 1, 0.0f};
  auto qkv = cudnn_.Upload(Random(b * t * 3 * c), MNT_DTYPE_BF16, {b, t, 3 * c});
  auto y = cudnn_.Poisoned(MNT_DTYPE_BF16, {b, t, c});
  auto lse = cudnn_.Poisoned(MNT_DTYPE_F32, {b, h, t});
  const sdk::Status s =
      cudnn_.RunCuda(MNT_OP_ATTENTION_FORWARD, {qkv.get()}, {y.get(), lse.get()}, &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED) << s.message();
  EXPECT_NE(s.message().find("attention=cudnn"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("D=12"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  // ... while fp32 storage runs the GEMM path (attention_gemm.cu), even
  // with cuDNN forced.
  auto qkv32 = cudnn_.Upload(Random(b * t * 3 * c), MNT_DTYPE_F32, {b, t, 3 * c});
  auto y32 = cudnn_.Poisoned(MNT_DTYPE_F32, {b, t, c});
  auto lse32 = cudnn_.Poisoned(MNT_DTYPE_F32, {b, h, t});
  ASSERT_TRUE(cudnn_.RunBoth(MNT_OP_ATTENTION_FORWARD, {qkv32.get()},
                             {y32.get(), lse32.get()}, &p).ok());
  EXPECT_TRUE(AllClose(cudnn_.Download(*y32, true), cudnn_.Download(*y32, false), 1e-4, 1e-5));
  // And auto falls back quietly for the D = 12 bf16 case.
  DualBackend automatic;
  automatic.Init("attention=auto");
  auto qkv_a = automatic.Upload(Random(b * t * 3 * c), MNT_DTYPE_BF16, {b, t, 3 * c});
  auto y_a = automatic.Poisoned(MNT_DTYPE_BF16, {b, t, c});
  auto lse_a = automatic.Poisoned(MNT_DTYPE_F32, {b, h, t});
  ASSERT_TRUE(automatic.RunBoth(MNT_OP_ATTENTION_FORWARD, {qkv_a.get()},
                                {y_a.get(), lse_a.get()}, &p).ok());
  EXPECT_TRUE(Close(automatic.Download(*y_a, true), automatic.Download(*y_a, false), 1e-2));
}

}  // namespace
}  // namespace mnt::cuda

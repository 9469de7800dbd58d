// The ABI 1.6 fused ops on CUDA against the CPU backend on the same fresh
// random inputs: GEMM_BIAS_GELU, GEMM_DGELU (with and without its bias
// gradient, overwritten and accumulated), GEMM_BIAS_GRAD (both), on shapes
// that take cuBLASLt's epilogues (N a multiple of 8, aligned) and on odd
// shapes that take the unfused path; FUSED_CLASSIFIER in every storage
// dtype with a device multiplier, the mean, ignored rows and padding.
// Outputs start poisoned with NaN. Tolerance per output:
// |cuda - cpu| <= tol * max|cpu| with tol 1e-4 for fp32 (accumulation order,
// cuBLASLt's own GELU), 2e-3 for tf32, 1e-2 for bf16/fp16 storage.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::DualBackendTest;
using testing::Pair;
using testing::RoundedTo;

::testing::AssertionResult CloseToMax(const std::vector<float>& got,
                                      const std::vector<float>& want, double tol) {
  double scale = 0.0;
  for (float v : want) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  return testing::AllClose(got, want, 0.0, tol * scale + 1e-30);
}

struct Config {
  MNT_DType dtype;
  MNT_ComputeMode compute;
  double tol;
};
const Config kConfigs[] = {{MNT_DTYPE_F32, MNT_COMPUTE_F32, 1e-4},
                           {MNT_DTYPE_F32, MNT_COMPUTE_TF32, 2e-3},
                           {MNT_DTYPE_BF16, MNT_COMPUTE_BF16, 1e-2},
                           {MNT_DTYPE_F16, MNT_COMPUTE_F16, 1e-2}};

struct Shape {
  int64_t m, n, k;
};
// The first takes the epilogues; the second (N odd) the unfused path.
const Shape kShapes[] = {{64, 96, 48}, {37, 21, 19}};

class CudaFusedTest : public DualBackendTest {
 protected:
  std::unique_ptr<Pair> Operand(const Config& c, bool trans, int64_t rows, int64_t cols) {
    const std::vector<float> v = RoundedTo(Random(rows * cols), c.dtype);
    return trans ? d_.Upload(v, c.dtype, {cols, rows}) : d_.Upload(v, c.dtype, {rows, cols});
  }
  void ExpectSame(const Pair& p, double tol) {
    EXPECT_TRUE(CloseToMax(d_.Download(p, true), d_.Download(p, false), tol));
  }
};

TEST_F(CudaFusedTest, GemmBiasGeluMatchesCpu) {
  for (const Config& c : kConfigs) {
    for (const Shape& s : kShapes) {
      for (int tr = 0; tr < 2; ++tr) {
        SCOPED_TRACE(::testing::Message() << sdk::DTypeName(c.dtype) << " mode " << c.compute
                                          << " M=" << s.m << " N=" << s.n << " tr=" << tr);
        auto a = Operand(c, tr, s.m, s.k), b = Operand(c, !tr, s.k, s.n);
        auto bias = d_.Upload(RoundedTo(Random(s.n), c.dtype), c.dtype, {s.n});
        auto y = d_.Poisoned(c.dtype, {s.m, s.n}), pre = d_.Poisoned(c.dtype, {s.m, s.n});
        const MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, tr, !tr, 1.0f, 0.0f, c.compute};
        const sdk::Status st =
            d_.RunBoth(MNT_OP_GEMM_BIAS_GELU, {a.get(), b.get(), bias.get()},
                       {y.get(), pre.get()}, &p);
        ASSERT_TRUE(st.ok()) << st.message();
        ExpectSame(*pre, c.tol);
        ExpectSame(*y, c.tol);
      }
    }
  }
}

TEST_F(CudaFusedTest, GemmDgeluMatchesCpu) {
  for (const Config& c : kConfigs) {
    for (const Shape& s : kShapes) {
      for (int variant = 0; variant < 3; ++variant) {  // no dbias, overwrite, accumulate
        SCOPED_TRACE(::testing::Message() << sdk::DTypeName(c.dtype) << " mode " << c.compute
                                          << " M=" << s.m << " N=" << s.n
                                          << " variant=" << variant);
        auto a = Operand(c, false, s.m, s.k), b = Operand(c, true, s.k, s.n);
        auto pre = d_.Upload(RoundedTo(Random(s.m * s.n, 2.0f), c.dtype), c.dtype,
                             {s.m, s.n});
        auto dpre = d_.Poisoned(c.dtype, {s.m, s.n});
        auto dbias = variant == 2 ? d_.Upload(RoundedTo(Random(s.n), c.dtype), c.dtype, {s.n})
                                  : d_.Poisoned(c.dtype, {s.n});
        const MNT_GemmEpilogueParams p{MNT_GemmEpilogueParams_STRUCT_SIZE, 0, 1, 1.0f, 0.0f,
                                       c.compute, variant == 2};
        std::vector<const Pair*> out = {dpre.get()};
        if (variant > 0) out.push_back(dbias.get());
        const sdk::Status st =
            d_.RunBoth(MNT_OP_GEMM_DGELU, {a.get(), b.get(), pre.get()}, out, &p);
        ASSERT_TRUE(st.ok()) << st.message();
        ExpectSame(*dpre, c.tol);
        if (variant > 0) ExpectSame(*dbias, c.tol);
      }
    }
  }
}

TEST_F(CudaFusedTest, GemmBiasGradMatchesCpu) {
  for (const Config& c : kConfigs) {
    for (const Shape& s : kShapes) {
      for (int accumulate = 0; accumulate < 2; ++accumulate) {
        SCOPED_TRACE(::testing::Message() << sdk::DTypeName(c.dtype) << " mode " << c.compute
                                          << " M=" << s.m << " N=" << s.n
                                          << " accumulate=" << accumulate);
        // dW [M=out, N=in] = dYᵀ · X with dY [K=rows, M], X [K, N].
        auto dy = Operand(c, true, s.m, s.k), x = Operand(c, false, s.k, s.n);
        auto dw = accumulate ? d_.Upload(RoundedTo(Random(s.m * s.n), c.dtype), c.dtype,
                                         {s.m, s.n})
                             : d_.Poisoned(c.dtype, {s.m, s.n});
        auto db = accumulate ? d_.Upload(RoundedTo(Random(s.m), c.dtype), c.dtype, {s.m})
                             : d_.Poisoned(c.dtype, {s.m});
        const MNT_GemmEpilogueParams p{MNT_GemmEpilogueParams_STRUCT_SIZE, 1, 0, 1.0f,
                                       accumulate ? 1.0f : 0.0f, c.compute, accumulate};
        const sdk::Status st = d_.RunBoth(MNT_OP_GEMM_BIAS_GRAD, {dy.get(), x.get()},
                                          {dw.get(), db.get()}, &p);
        ASSERT_TRUE(st.ok()) << st.message();
        ExpectSame(*dw, c.tol);
        ExpectSame(*db, std::max(c.tol, testing::StorageTolerance(c.dtype)));
      }
    }
  }
}

TEST_F(CudaFusedTest, FusedClassifierMatchesCpu) {
  const int64_t batch = 24, width = 1024, classes = 1000;
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    std::vector<float> x = Random(batch * width, 3.0f);
    for (int64_t r = 0; r < batch; r += 3) x[r * width + 7] += 60.0f;  // large offsets
    x = RoundedTo(x, dtype);
    std::vector<int32_t> t(batch);
    for (int64_t r = 0; r < batch; ++r) t[r] = static_cast<int32_t>(rng_() % classes);
    t[5] = -1;  // ignored
    auto logits = d_.Upload(x, dtype, {batch, width});
    auto targets = d_.UploadI32(t, {batch});
    auto multiplier = d_.Upload({1024.0f}, MNT_DTYPE_F32, {1});
    auto losses = d_.Poisoned(MNT_DTYPE_F32, {batch});
    auto mean = d_.Poisoned(MNT_DTYPE_F32, {1});
    const MNT_CrossEntropyParams p{MNT_CrossEntropyParams_STRUCT_SIZE,
                                   1.0f / static_cast<float>(batch), classes};
    const sdk::Status st =
        d_.RunBoth(MNT_OP_FUSED_CLASSIFIER, {targets.get(), multiplier.get()},
                   {logits.get(), losses.get(), mean.get()}, &p);
    ASSERT_TRUE(st.ok()) << st.message();
    ExpectSame(*losses, 1e-5);
    ExpectSame(*mean, 1e-5);
    ExpectSame(*logits, testing::StorageTolerance(dtype));
  }
}

}  // namespace
}  // namespace mnt::cuda

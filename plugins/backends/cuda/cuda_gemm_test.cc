// cuBLASLt GEMM against the CPU reference in every compute mode, operand and
// output dtype, transpose combination, with and without bias and beta, on odd
// shapes; outputs poisoned with NaN first. Error bound per element:
// tol * (|alpha| sum_k |a_ik b_kj| + |beta c_ij| + |bias_j|), with tol 1e-5
// for fp32 and for bf16/fp16 operands (identically rounded on both sides, so
// only the accumulation order differs), 2e-3 for tf32 (tensor cores may round
// operands differently from the reference's nearest-even), plus the output
// dtype's own rounding (bf16 1e-2, fp16 2e-3).
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::DualBackend;
using testing::RoundedTo;
using testing::StorageTolerance;

struct Shape {
  int64_t m, n, k;
};

class CudaGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MNT_SKIP_WITHOUT_GPU();
    rng_.seed(testing::FreshSeed());
    d_.Init();
  }
  std::vector<float> Random(int64_t n) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> v(n);
    for (float& e : v) e = dist(rng_);
    return v;
  }

  void Check(Shape s, bool ta, bool tb, MNT_DType a_t, MNT_DType b_t, MNT_DType c_t,
             MNT_ComputeMode mode, bool with_bias, float beta) {
    SCOPED_TRACE(::testing::Message()
                 << "M=" << s.m << " N=" << s.n << " K=" << s.k << " ta=" << ta
                 << " tb=" << tb << " a=" << a_t << " b=" << b_t << " c=" << c_t
                 << " mode=" << mode << " bias=" << with_bias << " beta=" << beta);
    const std::vector<float> av = RoundedTo(Random(s.m * s.k), a_t);
    const std::vector<float> bv = RoundedTo(Random(s.k * s.n), b_t);
    const std::vector<float> cv = RoundedTo(Random(s.m * s.n), c_t);
    const std::vector<float> biasv = RoundedTo(Random(s.n), MNT_DTYPE_F32);
    auto a = d_.Upload(av, a_t, ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k});
    auto b = d_.Upload(bv, b_t, tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n});
    auto c = beta != 0.0f ? d_.Upload(cv, c_t, {s.m, s.n}) : d_.Poisoned(c_t, {s.m, s.n});
    auto bias = d_.Upload(biasv, MNT_DTYPE_F32, {s.n});
    const float alpha = 1.25f;
    const MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, ta, tb, alpha, beta, mode};
    std::vector<const testing::Pair*> in = {a.get(), b.get()};
    if (with_bias) in.push_back(bias.get());
    ASSERT_TRUE(d_.RunBoth(MNT_OP_GEMM, in, {c.get()}, &p).ok());
    const std::vector<float> got = d_.Download(*c, true), want = d_.Download(*c, false);
    const double tol = std::max(mode == MNT_COMPUTE_TF32 ? 2e-3 : 1e-5, StorageTolerance(c_t));
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double scale = (beta != 0.0f ? std::fabs(beta * cv[i * s.n + j]) : 0.0) +
                       (with_bias ? std::fabs(biasv[j]) : 0.0);
        for (int64_t kk = 0; kk < s.k; ++kk) {
          const float x = ta ? av[kk * s.m + i] : av[i * s.k + kk];
          const float y = tb ? bv[j * s.k + kk] : bv[kk * s.n + j];
          scale += std::fabs(alpha * static_cast<double>(x) * y);
        }
        const float g = got[i * s.n + j], w = want[i * s.n + j];
        ASSERT_FALSE(std::isnan(g)) << "NaN at " << i << "," << j;
        ASSERT_FALSE(std::isnan(w)) << "reference NaN at " << i << "," << j;
        ASSERT_LE(std::fabs(static_cast<double>(g) - w), tol * scale + 1e-6)
            << "at " << i << "," << j << ": got " << g << ", want " << w;
      }
    }
  }

  std::mt19937 rng_;
  DualBackend d_;
};

constexpr MNT_DType kTypes[] = {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16};
constexpr MNT_ComputeMode kModes[] = {MNT_COMPUTE_F32, MNT_COMPUTE_TF32, MNT_COMPUTE_BF16,
                                      MNT_COMPUTE_F16};

TEST_F(CudaGemmTest, EveryModeAndDtypeOnOddShapes) {
  for (MNT_ComputeMode mode : kModes) {
    for (MNT_DType t : kTypes) {
      for (MNT_DType c_t : kTypes) {
        Check({17, 33, 9}, false, false, t, t, c_t, mode, true, 0.0f);
        Check({65, 7, 130}, false, false, t, t, c_t, mode, false, 0.5f);
      }
    }
  }
}

TEST_F(CudaGemmTest, TransposesBiasBetaMixedOperands) {
  for (MNT_ComputeMode mode : kModes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        Check({31, 45, 67}, ta, tb, MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_DTYPE_F32, mode, true, 1.0f);
        Check({31, 45, 67}, ta, tb, MNT_DTYPE_BF16, MNT_DTYPE_F32, MNT_DTYPE_BF16, mode, true, 0.0f);
        Check({1, 1, 1}, ta, tb, MNT_DTYPE_F16, MNT_DTYPE_BF16, MNT_DTYPE_F32, mode, true, -1.0f);
      }
    }
  }
}

TEST_F(CudaGemmTest, EmptyKGivesBetaCPlusBias) {
  for (MNT_ComputeMode mode : kModes) {
    Check({5, 6, 0}, false, false, MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_DTYPE_F32, mode, true, 0.5f);
  }
}

// A bias 4 bytes into its buffer (as a slice of a parameter block is): the
// backend stages it rather than hand cuBLASLt a pointer its cached
// algorithm may not accept. Both sides read the same slice.
TEST_F(CudaGemmTest, MisalignedBiasSlice) {
  const int64_t m = 17, n = 33, k = 9;
  for (MNT_ComputeMode mode : kModes) {
    SCOPED_TRACE(::testing::Message() << "mode=" << mode);
    auto a = d_.Upload(Random(m * k), MNT_DTYPE_F32, {m, k});
    auto b = d_.Upload(Random(k * n), MNT_DTYPE_F32, {k, n});
    auto bias = d_.Upload(Random(n + 1), MNT_DTYPE_F32, {n + 1});
    auto c = d_.Poisoned(MNT_DTYPE_F32, {m, n});
    const MNT_GemmParams p{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, mode};
    for (bool cuda : {false, true}) {
      MNT_Tensor slice = cuda ? bias->cuda() : bias->cpu();
      slice.data = static_cast<float*>(slice.data) + 1;
      slice.dims[0] = n;
      const sdk::BackendClient& side = cuda ? d_.cuda() : d_.cpu();
      ASSERT_TRUE(side.Run(MNT_OP_GEMM, {cuda ? a->cuda() : a->cpu(),
                                         cuda ? b->cuda() : b->cpu(), slice},
                           {cuda ? c->cuda() : c->cpu()}, &p)
                      .ok());
    }
    // |a|, |b| <= 2, K = 9: sums stay below 40, so 2e-3 relative covers tf32.
    const double rtol = mode == MNT_COMPUTE_F32 ? 1e-5 : 2e-3;
    EXPECT_TRUE(testing::AllClose(d_.Download(*c, true), d_.Download(*c, false), rtol,
                                  mode == MNT_COMPUTE_F32 ? 1e-4 : 0.1));
  }
}

TEST_F(CudaGemmTest, LargeSquareTf32AndBf16) {
  for (MNT_ComputeMode mode : {MNT_COMPUTE_TF32, MNT_COMPUTE_BF16}) {
    Check({257, 511, 1023}, false, true, MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_DTYPE_F32, mode, true, 0.0f);
  }
}

}  // namespace
}  // namespace mnt::cuda

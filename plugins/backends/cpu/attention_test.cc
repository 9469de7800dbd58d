// ATTENTION_FORWARD/BACKWARD against a float64 reference: forward values and
// logsumexp, and the backward against central finite differences of the
// float64 loss sum(y * g), for causal and full attention in every dtype; and
// sequences longer than the kernel's query block (several blocks, a partial
// last one, causal blocks that see fewer keys) on enough heads for two
// threads, against float64 forward and analytic backward.
#include <algorithm>
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

constexpr int64_t kB = 2, kT = 5, kH = 2, kD = 4, kC = kH * kD;

// y [B,T,C] and lse [B,H,T] from qkv [B,T,3C], all in double.
void Reference(const std::vector<double>& qkv, bool causal, double scale,
               std::vector<double>* y, std::vector<double>* lse) {
  y->assign(kB * kT * kC, 0.0);
  lse->assign(kB * kH * kT, 0.0);
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t h = 0; h < kH; ++h) {
      for (int64_t t = 0; t < kT; ++t) {
        const int64_t n = causal ? t + 1 : kT;
        std::vector<double> s(n);
        double max = -1e300;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < kD; ++e) {
            dot += qkv[(b * kT + t) * 3 * kC + h * kD + e] *
                   qkv[(b * kT + j) * 3 * kC + kC + h * kD + e];
          }
          s[j] = scale * dot;
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (double& v : s) sum += (v = std::exp(v - max));
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t e = 0; e < kD; ++e) {
            (*y)[(b * kT + t) * kC + h * kD + e] +=
                s[j] / sum * qkv[(b * kT + j) * 3 * kC + 2 * kC + h * kD + e];
          }
        }
        (*lse)[(b * kH + h) * kT + t] = max + std::log(sum);
      }
    }
  }
}

double Loss(const std::vector<double>& qkv, bool causal, double scale,
            const std::vector<double>& g) {
  std::vector<double> y, lse;
  Reference(qkv, causal, scale, &y, &lse);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * g[i];
  return s;
}

class AttentionTest : public BackendFixture {};

TEST_F(AttentionTest, ForwardAndBackwardMatchFloat64) {
  for (MNT_DType dtype : FloatDTypes()) {
    for (int causal : {1, 0}) {
      for (float scale : {0.0f, 0.7f}) {
        SCOPED_TRACE(::testing::Message() << sdk::DTypeName(dtype) << " causal="
                                          << causal << " scale=" << scale);
        std::vector<double> qkv = Stored(Random(kB * kT * 3 * kC, -1.5, 1.5), dtype);
        const std::vector<double> g = Stored(Random(kB * kT * kC), dtype);
        const double s = scale != 0.0f ? scale : 1.0 / std::sqrt(double(kD));
        MNT_Tensor tqkv = Upload(qkv, dtype, {kB, kT, 3 * kC});
        MNT_Tensor ty = Empty(dtype, {kB, kT, kC});
        MNT_Tensor tlse = Empty(MNT_DTYPE_F32, {kB, kH, kT});
        MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, kH, causal, scale};
        sdk::Status st = Run(MNT_OP_ATTENTION_FORWARD, {tqkv}, {ty, tlse}, &p);
        ASSERT_TRUE(st.ok()) << st.message();
        std::vector<double> y, lse;
        Reference(qkv, causal, s, &y, &lse);
        const double tol = DTypeTolerance(dtype);
        EXPECT_TRUE(AllCloseRelative(Download(ty), y, tol));
        EXPECT_TRUE(AllCloseRelative(Download(tlse), lse, 1e-5));

        MNT_Tensor tg = Upload(g, dtype, {kB, kT, kC});
        MNT_Tensor tdqkv = Empty(dtype, {kB, kT, 3 * kC});
        st = Run(MNT_OP_ATTENTION_BACKWARD, {tg, tqkv, ty, tlse}, {tdqkv}, &p);
        ASSERT_TRUE(st.ok()) << st.message();
        const double h = 1e-6;
        std::vector<double> want(qkv.size());
        for (size_t i = 0; i < qkv.size(); ++i) {
          const double v = qkv[i];
          qkv[i] = v + h; const double up = Loss(qkv, causal, s, g);
          qkv[i] = v - h; const double down = Loss(qkv, causal, s, g);
          qkv[i] = v;
          want[i] = (up - down) / (2 * h);
        }
        // The backward reads y from 16-bit storage in the f16/bf16 cases
        // (as flash attention does), hence the storage tolerance; fp32 is
        // limited by the finite differences (~1e-8 relative) and fp32 y.
        EXPECT_TRUE(AllCloseRelative(Download(tdqkv), want, std::max(tol, 1e-4)));
        // Causal: the first query sees only itself, so its q gradient is
        // zero (softmax over one element): dp - dy . y cancels up to the
        // fp32 rounding of two dot products summed in different orders
        // (~1e-7 here), where a leak from a masked key would be ~0.1.
        if (causal) {
          const std::vector<double> got = Download(tdqkv);
          for (int64_t e = 0; e < kC; ++e) EXPECT_NEAR(got[e], 0.0, 1e-6) << e;
        }
      }
    }
  }
}

// Any shape: qkv [B,T,3C] -> y [B,T,C], lse [B,H,T], and with dy the
// analytic gradient dqkv, all in float64 (P = softmax(scale Q K^T),
// Y = P V, dV = P^T dY, dS = P o (dY V^T - rowsum(dY o Y)),
// dQ = scale dS K, dK = scale dS^T Q).
struct Shape {
  int64_t b, t, h, d;
  int64_t c() const { return h * d; }
};

void ReferenceWithGradient(const Shape& sh, const std::vector<double>& qkv,
                           const std::vector<double>& dy, bool causal, double scale,
                           std::vector<double>* y, std::vector<double>* lse,
                           std::vector<double>* dqkv) {
  const int64_t T = sh.t, D = sh.d, C = sh.c();
  y->assign(sh.b * T * C, 0.0);
  lse->assign(sh.b * sh.h * T, 0.0);
  dqkv->assign(qkv.size(), 0.0);
  auto at = [&](int64_t b, int64_t t, int which, int64_t h) {
    return (b * T + t) * 3 * C + which * C + h * D;
  };
  for (int64_t b = 0; b < sh.b; ++b) {
    for (int64_t h = 0; h < sh.h; ++h) {
      std::vector<double> p(T * T, 0.0);
      for (int64_t i = 0; i < T; ++i) {
        const int64_t n = causal ? i + 1 : T;
        double max = -1e300;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < D; ++e) dot += qkv[at(b, i, 0, h) + e] * qkv[at(b, j, 1, h) + e];
          p[i * T + j] = scale * dot;
          max = std::max(max, p[i * T + j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += (p[i * T + j] = std::exp(p[i * T + j] - max));
        (*lse)[(b * sh.h + h) * T + i] = max + std::log(sum);
        double* yi = y->data() + (b * T + i) * C + h * D;
        const double* gi = dy.data() + (b * T + i) * C + h * D;
        std::vector<double> dp(n);
        double rowsum = 0;
        for (int64_t j = 0; j < n; ++j) {
          p[i * T + j] /= sum;
          double dot = 0;
          for (int64_t e = 0; e < D; ++e) {
            yi[e] += p[i * T + j] * qkv[at(b, j, 2, h) + e];
            dot += gi[e] * qkv[at(b, j, 2, h) + e];
          }
          dp[j] = dot;
          rowsum += p[i * T + j] * dot;
        }
        for (int64_t j = 0; j < n; ++j) {
          const double ds = p[i * T + j] * (dp[j] - rowsum);
          for (int64_t e = 0; e < D; ++e) {
            (*dqkv)[at(b, i, 0, h) + e] += scale * ds * qkv[at(b, j, 1, h) + e];
            (*dqkv)[at(b, j, 1, h) + e] += scale * ds * qkv[at(b, i, 0, h) + e];
            (*dqkv)[at(b, j, 2, h) + e] += p[i * T + j] * gi[e];
          }
        }
      }
    }
  }
}

TEST_F(AttentionTest, LongSequencesMatchFloat64InEveryBlock) {
  // 150 = two full query blocks of 64 and a partial one; 8 x 4 heads of
  // 150 x 16 is enough work for the kernels' second thread.
  const Shape sh{8, 150, 4, 16};
  for (MNT_DType dtype : FloatDTypes()) {
    for (int causal : {1, 0}) {
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(dtype) << " causal=" << causal);
      const std::vector<double> qkv = Stored(Random(sh.b * sh.t * 3 * sh.c(), -2.0, 2.0), dtype);
      const std::vector<double> dy = Stored(Random(sh.b * sh.t * sh.c()), dtype);
      const float scale = 0.25f;
      MNT_Tensor tqkv = Upload(qkv, dtype, {sh.b, sh.t, 3 * sh.c()});
      MNT_Tensor ty = Empty(dtype, {sh.b, sh.t, sh.c()});
      MNT_Tensor tlse = Empty(MNT_DTYPE_F32, {sh.b, sh.h, sh.t});
      MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, static_cast<int32_t>(sh.h), causal,
                            scale};
      sdk::Status st = Run(MNT_OP_ATTENTION_FORWARD, {tqkv}, {ty, tlse}, &p);
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<double> y, lse, dqkv;
      ReferenceWithGradient(sh, qkv, dy, causal, scale, &y, &lse, &dqkv);
      const double tol = DTypeTolerance(dtype);
      EXPECT_TRUE(AllCloseRelative(Download(ty), y, tol));
      EXPECT_TRUE(AllCloseRelative(Download(tlse), lse, 1e-5));

      MNT_Tensor tdy = Upload(dy, dtype, {sh.b, sh.t, sh.c()});
      MNT_Tensor tdqkv = Empty(dtype, {sh.b, sh.t, 3 * sh.c()});
      st = Run(MNT_OP_ATTENTION_BACKWARD, {tdy, tqkv, ty, tlse}, {tdqkv}, &p);
      ASSERT_TRUE(st.ok()) << st.message();
      // The kernel's dy . y reads y as stored: within the storage tolerance.
      EXPECT_TRUE(AllCloseRelative(Download(tdqkv), dqkv, tol));
    }
  }
}

// ABI 1.8: compute TF32 rounds every product's operands to TF32 (as the
// CUDA backend's tensor cores do): within TF32's tolerance of float64, not
// the fp32 result's bits; a 1.7 caller's shorter params (whatever lies
// where `compute` would be) and compute 0 give fp32; other modes are refused.
TEST_F(AttentionTest, Tf32ProductsRoundTheirOperands) {
  const Shape sh{4, 150, 4, 16};
  for (int causal : {1, 0}) {
    SCOPED_TRACE(::testing::Message() << "causal=" << causal);
    const std::vector<double> qkv = Random(sh.b * sh.t * 3 * sh.c(), -2.0, 2.0);
    const std::vector<double> dy = Random(sh.b * sh.t * sh.c());
    std::vector<double> y, lse, dqkv;
    ReferenceWithGradient(sh, qkv, dy, causal, 0.25, &y, &lse, &dqkv);
    MNT_Tensor tqkv = Upload(qkv, MNT_DTYPE_F32, {sh.b, sh.t, 3 * sh.c()});
    MNT_Tensor tdy = Upload(dy, MNT_DTYPE_F32, {sh.b, sh.t, sh.c()});
    struct Result {
      std::vector<double> y, lse, dqkv;
    };
    const auto run = [&](const MNT_AttentionParams& p) {
      MNT_Tensor ty = Empty(MNT_DTYPE_F32, {sh.b, sh.t, sh.c()});
      MNT_Tensor tlse = Empty(MNT_DTYPE_F32, {sh.b, sh.h, sh.t});
      MNT_Tensor tdqkv = Empty(MNT_DTYPE_F32, {sh.b, sh.t, 3 * sh.c()});
      EXPECT_TRUE(Run(MNT_OP_ATTENTION_FORWARD, {tqkv}, {ty, tlse}, &p).ok());
      EXPECT_TRUE(Run(MNT_OP_ATTENTION_BACKWARD, {tdy, tqkv, ty, tlse}, {tdqkv}, &p).ok());
      return Result{Download(ty), Download(tlse), Download(tdqkv)};
    };
    const int32_t h = static_cast<int32_t>(sh.h);
    const Result f32 = run({MNT_AttentionParams_STRUCT_SIZE, h, causal, 0.25f, MNT_COMPUTE_F32});
    const Result tf32 = run({MNT_AttentionParams_STRUCT_SIZE, h, causal, 0.25f, MNT_COMPUTE_TF32});
    EXPECT_TRUE(AllCloseRelative(f32.y, y, 1e-5));
    EXPECT_TRUE(AllCloseRelative(tf32.y, y, 3e-3));
    EXPECT_TRUE(AllCloseRelative(tf32.lse, lse, 3e-3));
    EXPECT_TRUE(AllCloseRelative(tf32.dqkv, dqkv, 1e-2));
    EXPECT_NE(tf32.y, f32.y) << "compute TF32 gave fp32's bits: nothing was rounded";
    EXPECT_NE(tf32.dqkv, f32.dqkv) << "the backward's products were not rounded";
    // Absent (a 1.7 caller) or 0: fp32, bit for bit.
    const Result old = run({MNT_AttentionParams_STRUCT_SIZE_1_7, h, causal, 0.25f,
                            MNT_COMPUTE_TF32});
    const Result zero = run({MNT_AttentionParams_STRUCT_SIZE, h, causal, 0.25f,
                             MNT_COMPUTE_INVALID});
    for (const Result* r : {&old, &zero}) {
      EXPECT_EQ(r->y, f32.y);
      EXPECT_EQ(r->dqkv, f32.dqkv);
    }
  }
  MNT_Tensor qkv = Upload(Random(kB * kT * 3 * kC), MNT_DTYPE_F32, {kB, kT, 3 * kC});
  MNT_Tensor ty = Empty(MNT_DTYPE_F32, {kB, kT, kC});
  MNT_Tensor tlse = Empty(MNT_DTYPE_F32, {kB, kH, kT});
  const MNT_AttentionParams bf16{MNT_AttentionParams_STRUCT_SIZE, kH, 1, 0.0f, MNT_COMPUTE_BF16};
  EXPECT_EQ(Run(MNT_OP_ATTENTION_FORWARD, {qkv}, {ty, tlse}, &bf16).message(),
            "ATTENTION_FORWARD: compute mode 3: attention's products take F32 or TF32");
}

TEST_F(AttentionTest, OperandErrorsAreOneLine) {
  MNT_Tensor qkv = Upload(Random(kB * kT * 3 * kC), MNT_DTYPE_F32, {kB, kT, 3 * kC});
  MNT_Tensor y = Empty(MNT_DTYPE_F32, {kB, kT, kC});
  MNT_Tensor lse = Empty(MNT_DTYPE_F32, {kB, kH, kT});
  MNT_Tensor lse16 = Empty(MNT_DTYPE_BF16, {kB, kH, kT});
  MNT_AttentionParams p{MNT_AttentionParams_STRUCT_SIZE, 3, 1, 0.0f};
  EXPECT_EQ(Run(MNT_OP_ATTENTION_FORWARD, {qkv}, {y, lse}, &p).message(),
            "ATTENTION_FORWARD: num_heads 3 must be positive and divide C=8");
  p.num_heads = kH;
  EXPECT_EQ(Run(MNT_OP_ATTENTION_FORWARD, {qkv}, {y, lse16}, &p).message(),
            "ATTENTION_FORWARD: out[1] lse is bf16[2,2,5], expected dtype f32");
  EXPECT_EQ(Run(MNT_OP_ATTENTION_FORWARD, {qkv}, {qkv, lse}, &p).message(),
            "ATTENTION_FORWARD: out[0] y is f32[2,5,24], expected [B=2, T=5, C=8]");
  EXPECT_EQ(Run(MNT_OP_ATTENTION_FORWARD, {qkv}, {y, lse}, nullptr).message(),
            "ATTENTION_FORWARD: params (MNT_AttentionParams) is NULL");
  MNT_Tensor bad = Upload(Random(kB * kT * 7), MNT_DTYPE_F32, {kB, kT, 7});
  EXPECT_EQ(Run(MNT_OP_ATTENTION_FORWARD, {bad}, {y, lse}, &p).message(),
            "ATTENTION_FORWARD: in[0] qkv is f32[2,5,7], last dimension must be 3*C");
  EXPECT_EQ(Run(MNT_OP_ATTENTION_BACKWARD, {y, qkv, y, lse}, {y}, &p).message(),
            "ATTENTION_BACKWARD: out[0] dqkv is f32[2,5,8], expected f32[2,5,24]");
}

}  // namespace
}  // namespace mnt::cpu

// ATTENTION_FORWARD/BACKWARD against a float64 reference: forward values and
// logsumexp, and the backward against central finite differences of the
// float64 loss sum(y * g), for causal and full attention in every dtype.
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
        // Causal: the last position's key and value get no gradient from
        // earlier queries only; the first query sees only itself, so its
        // q gradient is exactly zero (softmax over one element).
        if (causal) {
          const std::vector<double> got = Download(tdqkv);
          for (int64_t e = 0; e < kC; ++e) EXPECT_EQ(got[e], 0.0) << e;
        }
      }
    }
  }
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

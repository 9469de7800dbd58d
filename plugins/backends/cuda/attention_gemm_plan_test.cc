// The GEMM attention path's plan (attention_gemm_plan.h) and row math
// (attention_rows.h) on the CPU, which is what proves the algorithm without
// a GPU:
//   - the plan: every query row in exactly one block, each block's key
//     range exactly the keys its rows see, every head of every sequence in
//     exactly one chunk, the scratch within its budget (and as large as the
//     budget allows), the backward's first block seeing every key;
//   - every operand element of every product (in stored coordinates, via
//     offset + j * stride + row * ld + col) is the element of the packed ABI
//     layout the product means (qkv [B,T,3C], y/dy [B,T,C], score buffers
//     [heads, rows, keys]), and the score rows of the row kernels likewise;
//   - the plan run end to end with a naive strided GEMM and the row kernels'
//     helpers, outputs and scratch poisoned with NaN, against a float64
//     forward and analytic backward, with plans of many blocks and chunks
//     as well as the kernels' own: fp32 products within 3e-6 of the largest
//     element (y, lse, dqkv); products on operands cut to TF32 (what
//     CUBLAS_COMPUTE_32F_FAST_TF32 multiplies; rounded or truncated) within
//     1e-2 (y, dqkv) and 3e-3 (lse), the GPU test's TF32 tolerances.
#include "plugins/backends/cuda/attention_gemm_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/cuda/attention_rows.h"

namespace mnt::cuda {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<AttentionGemmDims> PlanShapes() {
  std::vector<AttentionGemmDims> out;
  for (int causal = 0; causal < 2; ++causal) {
    for (int64_t t : {1, 2, 37, 255, 256, 257, 300, 1024, 1500}) {
      for (int64_t h : {1, 3, 12}) out.push_back({2, t, h, 8, causal != 0});
    }
  }
  return out;
}

std::vector<size_t> Budgets() {
  return {1, 64, 4000, 40 * 4 * 10, 1 << 16, 1 << 20, kAttentionGemmScratchBudget};
}

TEST(AttentionGemmPlanTest, ScratchStaysWithinTheBudgetAndUsesIt) {
  for (const AttentionGemmDims& d : PlanShapes()) {
    for (int buffers : {kForwardScoreBuffers, kBackwardScoreBuffers}) {
      for (size_t budget : Budgets()) {
        SCOPED_TRACE(::testing::Message() << "T=" << d.t << " H=" << d.h << " causal="
                                          << d.causal << " buffers=" << buffers
                                          << " budget=" << budget);
        const AttentionGemmPlan p = PlanAttentionGemm(d, buffers, budget);
        ASSERT_GE(p.block_rows, 1);
        ASSERT_LE(p.block_rows, d.t);
        ASSERT_GE(p.heads_per_chunk, 1);
        ASSERT_LE(p.heads_per_chunk, d.h);
        EXPECT_EQ(p.blocks, (d.t + p.block_rows - 1) / p.block_rows);
        EXPECT_EQ(p.chunks, (d.h + p.heads_per_chunk - 1) / p.heads_per_chunk);
        const int64_t pitch = ScoreRowPitch(d.t);
        ASSERT_GE(pitch, d.t);
        ASSERT_LT(pitch, d.t + 4);
        ASSERT_EQ(pitch % 4, 0);  // 16-byte score rows
        EXPECT_EQ(p.buffer_floats, p.heads_per_chunk * p.block_rows * pitch);
        EXPECT_EQ(p.scratch_bytes, sizeof(float) * buffers * p.buffer_floats);
        const size_t one_row = sizeof(float) * buffers * pitch;
        if (budget >= one_row) {
          EXPECT_LE(p.scratch_bytes, budget);
          // As many heads as fit, and no fewer rows than the preference.
          if (p.heads_per_chunk < d.h) {
            EXPECT_GT(one_row * p.block_rows * (p.heads_per_chunk + 1), budget);
          }
          const int64_t preferred =
              d.causal ? std::min(d.t, kAttentionGemmCausalRows) : d.t;
          if (p.block_rows < preferred) {
            EXPECT_GT(one_row * (p.block_rows + 1), budget);
          } else {
            EXPECT_EQ(p.block_rows, preferred);
          }
        } else {
          EXPECT_EQ(p.block_rows, 1);  // the smallest plan there is
          EXPECT_EQ(p.heads_per_chunk, 1);
        }
      }
    }
  }
}

TEST(AttentionGemmPlanTest, BlocksCoverEveryRowOnceWithExactKeyRanges) {
  for (const AttentionGemmDims& d : PlanShapes()) {
    for (size_t budget : Budgets()) {
      SCOPED_TRACE(::testing::Message() << "T=" << d.t << " H=" << d.h
                                        << " causal=" << d.causal << " budget=" << budget);
      const AttentionGemmPlan p = PlanAttentionGemm(d, kBackwardScoreBuffers, budget);
      std::vector<int> forward(d.t, 0), backward(d.t, 0);
      for (int64_t i = 0; i < p.blocks; ++i) {
        const QueryBlock q = BlockAt(d, p, i);
        ASSERT_GE(q.rows, 1);
        ASSERT_LE(q.r0 + q.rows, d.t);
        // The keys any row of the block sees: the last row's (causal) or all.
        int64_t seen = 0;
        for (int64_t r = q.r0; r < q.r0 + q.rows; ++r) {
          ++forward[r];
          seen = std::max(seen, d.causal ? r + 1 : d.t);
        }
        EXPECT_EQ(q.keys, seen);
        const QueryBlock back = BlockAt(d, p, BackwardBlockIndex(p, i));
        for (int64_t r = back.r0; r < back.r0 + back.rows; ++r) ++backward[r];
      }
      for (int64_t r = 0; r < d.t; ++r) {
        ASSERT_EQ(forward[r], 1) << "row " << r;
        ASSERT_EQ(backward[r], 1) << "row " << r;
      }
      // The backward's first block overwrites dK and dV, so it sees every key.
      EXPECT_EQ(BlockAt(d, p, BackwardBlockIndex(p, 0)).keys, d.t);
      // Chunks: every head of every sequence once.
      std::vector<int> heads(d.b * d.h, 0);
      for (int64_t ci = 0; ci < d.b * p.chunks; ++ci) {
        const HeadChunk c = ChunkAt(d, p, ci);
        ASSERT_GE(c.heads, 1);
        ASSERT_LE(c.heads, p.heads_per_chunk);
        ASSERT_LE(c.h0 + c.heads, d.h);
        for (int64_t h = c.h0; h < c.h0 + c.heads; ++h) ++heads[c.b * d.h + h];
      }
      for (int count : heads) ASSERT_EQ(count, 1);
    }
  }
}

// ---- Operands in the packed layout --------------------------------------------

// The element a product means, named in ABI terms.
struct Element {
  AttentionBuffer buffer;
  int64_t offset;
  bool operator==(const Element& o) const { return buffer == o.buffer && offset == o.offset; }
};

struct Layout {
  AttentionGemmDims d;
  int64_t C() const { return d.h * d.d; }
  // q (which 0), k (1), v (2) of head h at position t, element e.
  int64_t Qkv(int which, int64_t b, int64_t h, int64_t t, int64_t e) const {
    return (b * d.t + t) * 3 * C() + which * C() + h * d.d + e;
  }
  int64_t Out(int64_t b, int64_t h, int64_t t, int64_t e) const {
    return (b * d.t + t) * C() + h * d.d + e;
  }
};

// What (batch entry j, stored row, stored column) of A, B and C of a
// product must be.
struct Meaning {
  StridedProductSpec spec;
  std::function<Element(int64_t, int64_t, int64_t)> a, b, c;
};

std::vector<Meaning> Meanings(const AttentionGemmStep& s, const AttentionGemmPlan& p) {
  const Layout L{s.dims};
  const HeadChunk ch = s.chunk;
  const QueryBlock q = s.block;
  const auto qkv = [=](AttentionBuffer buf, int which, int64_t row0) {
    return [=](int64_t j, int64_t r, int64_t e) {
      return Element{buf, L.Qkv(which, ch.b, ch.h0 + j, row0 + r, e)};
    };
  };
  const auto out = [=](AttentionBuffer buf) {
    return [=](int64_t j, int64_t r, int64_t e) {
      return Element{buf, L.Out(ch.b, ch.h0 + j, q.r0 + r, e)};
    };
  };
  const auto scores = [=](AttentionBuffer buf) {
    return [=](int64_t j, int64_t r, int64_t key) {
      return Element{buf, (j * q.rows + r) * ScoreRowPitch(q.keys) + key};
    };
  };
  using B = AttentionBuffer;
  (void)p;
  return {
      {ScoresProduct(s, B::kProbs), qkv(B::kQkv, 0, q.r0), qkv(B::kQkv, 1, 0),
       scores(B::kProbs)},
      {OutputProduct(s), scores(B::kProbs), qkv(B::kQkv, 2, 0), out(B::kOut)},
      {ProbGradProduct(s), out(B::kOutGrad), qkv(B::kQkv, 2, 0), scores(B::kScoreGrads)},
      {ValueGradProduct(s, false), scores(B::kProbs), out(B::kOutGrad),
       qkv(B::kQkvGrad, 2, 0)},
      {QueryGradProduct(s, 0.5f), scores(B::kScoreGrads), qkv(B::kQkv, 1, 0),
       qkv(B::kQkvGrad, 0, q.r0)},
      {KeyGradProduct(s, 0.5f, false), scores(B::kScoreGrads), qkv(B::kQkv, 0, q.r0),
       qkv(B::kQkvGrad, 1, 0)},
  };
}

int64_t At(const MatrixRef& m, int64_t j, int64_t r, int64_t c) {
  return m.offset + j * m.stride + r * m.ld + c;
}

TEST(AttentionGemmPlanTest, EveryOperandElementIsThePackedLayoutsElement) {
  for (int causal = 0; causal < 2; ++causal) {
    const AttentionGemmDims d{2, 23, 3, 4, causal != 0};
    // Budgets giving one block of one chunk, and several of both.
    for (size_t budget : {kAttentionGemmScratchBudget, size_t{2 * 4 * 24 * 5 * 2}}) {
      const AttentionGemmPlan p = PlanAttentionGemm(d, kBackwardScoreBuffers, budget);
      for (int64_t ci = 0; ci < d.b * p.chunks; ++ci) {
        for (int64_t bi = 0; bi < p.blocks; ++bi) {
          const AttentionGemmStep s{d, ChunkAt(d, p, ci), BlockAt(d, p, bi)};
          int product = 0;
          for (const Meaning& m : Meanings(s, p)) {
            SCOPED_TRACE(::testing::Message() << "causal=" << causal << " budget=" << budget
                                              << " chunk " << ci << " block " << bi
                                              << " product " << product++);
            const StridedProductSpec& g = m.spec;
            ASSERT_EQ(g.batch, s.chunk.heads);
            const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
            const int64_t b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
            for (int64_t j = 0; j < g.batch; ++j) {
              for (int64_t r = 0; r < a_rows; ++r) {
                for (int64_t c = 0; c < a_cols; ++c) {
                  ASSERT_TRUE((Element{g.a.buffer, At(g.a, j, r, c)} == m.a(j, r, c)));
                }
              }
              for (int64_t r = 0; r < b_rows; ++r) {
                for (int64_t c = 0; c < b_cols; ++c) {
                  ASSERT_TRUE((Element{g.b.buffer, At(g.b, j, r, c)} == m.b(j, r, c)));
                }
              }
              for (int64_t r = 0; r < g.m; ++r) {
                for (int64_t c = 0; c < g.n; ++c) {
                  ASSERT_TRUE((Element{g.c.buffer, At(g.c, j, r, c)} == m.c(j, r, c)));
                  if (g.c.buffer == AttentionBuffer::kProbs ||
                      g.c.buffer == AttentionBuffer::kScoreGrads) {
                    ASSERT_LT(At(g.c, j, r, c), p.buffer_floats);  // within its buffer
                    ASSERT_EQ(g.c.ld % 4, 0);
                  }
                }
              }
            }
          }
          // The row kernels' rows: the score row, lse and y/dy of (head, query).
          const Layout L{d};
          for (int64_t g = 0; g < s.rows(); ++g) {
            const int64_t j = g / s.block.rows, r = g % s.block.rows;
            const int64_t h = s.chunk.h0 + j, t = s.block.r0 + r;
            const ScoreRow row = ScoreRowAt(s, g);
            EXPECT_EQ(row.scores, (j * s.block.rows + r) * ScoreRowPitch(s.block.keys));
            EXPECT_EQ(row.query, t);
            EXPECT_EQ(row.visible, causal ? t + 1 : d.t);
            EXPECT_LE(row.visible, s.block.keys);
            EXPECT_EQ(row.lse, (s.chunk.b * d.h + h) * d.t + t);
            EXPECT_EQ(row.out, L.Out(s.chunk.b, h, t, 0));
          }
        }
      }
    }
  }
}

// ---- The plan run on the CPU ----------------------------------------------------

// Host buffers of one call, by AttentionBuffer.
struct HostCall {
  std::vector<float> qkv, y, dy, dqkv, lse, scratch;
  float* Base(AttentionBuffer buf, const AttentionGemmPlan& p) {
    switch (buf) {
      case AttentionBuffer::kQkv: return qkv.data();
      case AttentionBuffer::kOut: return y.data();
      case AttentionBuffer::kOutGrad: return dy.data();
      case AttentionBuffer::kQkvGrad: return dqkv.data();
      default: return scratch.data() + ScoreBufferOffset(p, buf);
    }
  }
};

// What the products multiply: fp32 operands (CUBLAS_COMPUTE_32F), or
// operands cut to TF32's 10-bit mantissa (FAST_TF32), rounded to nearest or
// truncated (tensor cores fed fp32 registers ignore the low 13 bits; which
// one cuBLASLt's kernels do is not documented, so both are bounded).
enum class Operands { kFp32, kTf32Nearest, kTf32Truncated };

float AsOperand(float v, Operands o) {
  switch (o) {
    case Operands::kTf32Nearest: return RoundToTf32(v);
    case Operands::kTf32Truncated: return BitsToFloat(FloatToBits(v) & 0xffffe000u);
    default: return v;
  }
}

const char* Name(Operands o) {
  switch (o) {
    case Operands::kTf32Nearest: return "tf32 (rounded)";
    case Operands::kTf32Truncated: return "tf32 (truncated)";
    default: return "fp32";
  }
}

// cuBLASLt's contract on the host: fp32 accumulation, C not read when beta
// is 0.
void NaiveProduct(const StridedProductSpec& g, HostCall* call, const AttentionGemmPlan& p,
                  Operands ops) {
  const float* a = call->Base(g.a.buffer, p);
  const float* b = call->Base(g.b.buffer, p);
  float* c = call->Base(g.c.buffer, p);
  for (int64_t j = 0; j < g.batch; ++j) {
    for (int64_t r = 0; r < g.m; ++r) {
      for (int64_t col = 0; col < g.n; ++col) {
        float acc = 0.0f;
        for (int64_t e = 0; e < g.k; ++e) {
          const float av = g.trans_a ? a[At(g.a, j, e, r)] : a[At(g.a, j, r, e)];
          const float bv = g.trans_b ? b[At(g.b, j, col, e)] : b[At(g.b, j, e, col)];
          acc += AsOperand(av, ops) * AsOperand(bv, ops);
        }
        float& out = c[At(g.c, j, r, col)];
        out = g.beta == 0.0f ? g.alpha * acc : g.alpha * acc + g.beta * out;
      }
    }
  }
}

// SoftmaxRowsKernel's math, the reductions in index order.
void SoftmaxRows(const AttentionGemmStep& s, float scale, HostCall* call,
                 const AttentionGemmPlan& p) {
  for (int64_t g = 0; g < s.rows(); ++g) {
    const ScoreRow r = ScoreRowAt(s, g);
    float* row = call->Base(AttentionBuffer::kProbs, p) + r.scores;
    float top = -INFINITY;
    for (int64_t j = 0; j < r.visible; ++j) top = std::fmax(top, AttentionScaled(row[j], scale));
    float sum = 0.0f;
    for (int64_t j = 0; j < r.visible; ++j) {
      row[j] = AttentionExp(row[j], scale, top);
      sum += row[j];
    }
    const float inv = AttentionInverseSum(sum);
    for (int64_t j = 0; j < s.block.keys; ++j) row[j] = j < r.visible ? row[j] * inv : 0.0f;
    call->lse[r.lse] = AttentionRowLse(top, sum);
  }
}

// ScoreGradRowsKernel's math.
void ScoreGradRows(const AttentionGemmStep& s, float scale, HostCall* call,
                   const AttentionGemmPlan& p) {
  for (int64_t g = 0; g < s.rows(); ++g) {
    const ScoreRow r = ScoreRowAt(s, g);
    float delta = 0.0f;
    for (int64_t e = 0; e < s.dims.d; ++e) delta += call->dy[r.out + e] * call->y[r.out + e];
    float* pr = call->Base(AttentionBuffer::kProbs, p) + r.scores;
    float* gr = call->Base(AttentionBuffer::kScoreGrads, p) + r.scores;
    for (int64_t j = 0; j < s.block.keys; ++j) {
      pr[j] = AttentionRowProb(pr[j], scale, call->lse[r.lse], j, r.visible);
      gr[j] = AttentionRowScoreGrad(pr[j], gr[j], delta, j, r.visible);
    }
  }
}

// attention_gemm.cu's two loops, on the host.
// The plan of a call: the kernels' (default budget and blocks) or a small
// one that makes many blocks and chunks out of a small shape.
struct PlanChoice {
  size_t budget = kAttentionGemmScratchBudget;
  int64_t causal_rows = kAttentionGemmCausalRows;
  AttentionGemmPlan For(const AttentionGemmDims& d, int buffers) const {
    return PlanAttentionGemm(d, buffers, budget, causal_rows);
  }
};

void EmulateForward(const AttentionGemmDims& d, float scale, const PlanChoice& choice,
                    Operands ops, HostCall* call) {
  const AttentionGemmPlan p = choice.For(d, kForwardScoreBuffers);
  call->scratch.resize(p.buffers * p.buffer_floats);
  for (int64_t ci = 0; ci < d.b * p.chunks; ++ci) {
    for (int64_t bi = 0; bi < p.blocks; ++bi) {
      const AttentionGemmStep s{d, ChunkAt(d, p, ci), BlockAt(d, p, bi)};
      std::fill(call->scratch.begin(), call->scratch.end(), kNaN);  // nothing carries over
      NaiveProduct(ScoresProduct(s, AttentionBuffer::kProbs), call, p, ops);
      SoftmaxRows(s, scale, call, p);
      NaiveProduct(OutputProduct(s), call, p, ops);
    }
  }
}

void EmulateBackward(const AttentionGemmDims& d, float scale, const PlanChoice& choice,
                     Operands ops, HostCall* call) {
  const AttentionGemmPlan p = choice.For(d, kBackwardScoreBuffers);
  call->scratch.resize(p.buffers * p.buffer_floats);
  for (int64_t ci = 0; ci < d.b * p.chunks; ++ci) {
    for (int64_t i = 0; i < p.blocks; ++i) {
      const AttentionGemmStep s{d, ChunkAt(d, p, ci), BlockAt(d, p, BackwardBlockIndex(p, i))};
      std::fill(call->scratch.begin(), call->scratch.end(), kNaN);
      NaiveProduct(ScoresProduct(s, AttentionBuffer::kProbs), call, p, ops);
      NaiveProduct(ProbGradProduct(s), call, p, ops);
      ScoreGradRows(s, scale, call, p);
      NaiveProduct(ValueGradProduct(s, i == 0), call, p, ops);
      NaiveProduct(QueryGradProduct(s, scale), call, p, ops);
      NaiveProduct(KeyGradProduct(s, scale, i == 0), call, p, ops);
    }
  }
}

// Attention in float64, forward and analytic backward, head by head.
struct Reference {
  std::vector<double> y, lse, dqkv;
};
Reference Float64Attention(const AttentionGemmDims& d, double scale,
                           const std::vector<float>& qkv, const std::vector<float>& dy) {
  const Layout L{d};
  Reference ref;
  ref.y.assign(d.b * d.t * L.C(), 0.0);
  ref.lse.assign(d.b * d.h * d.t, 0.0);
  ref.dqkv.assign(d.b * d.t * 3 * L.C(), 0.0);
  std::vector<double> p(d.t * d.t);
  for (int64_t b = 0; b < d.b; ++b) {
    for (int64_t h = 0; h < d.h; ++h) {
      const auto q = [&](int w, int64_t t, int64_t e) { return double(qkv[L.Qkv(w, b, h, t, e)]); };
      for (int64_t i = 0; i < d.t; ++i) {
        const int64_t n = d.causal ? i + 1 : d.t;
        double top = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t e = 0; e < d.d; ++e) s += q(0, i, e) * q(1, j, e);
          p[i * d.t + j] = scale * s;
          top = std::max(top, scale * s);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(p[i * d.t + j] - top);
        for (int64_t j = 0; j < d.t; ++j) {
          p[i * d.t + j] = j < n ? std::exp(p[i * d.t + j] - top) / sum : 0.0;
        }
        ref.lse[(b * d.h + h) * d.t + i] = top + std::log(sum);
        for (int64_t e = 0; e < d.d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j) acc += p[i * d.t + j] * q(2, j, e);
          ref.y[L.Out(b, h, i, e)] = acc;
        }
      }
      for (int64_t i = 0; i < d.t; ++i) {
        const auto g = [&](int64_t e) { return double(dy[L.Out(b, h, i, e)]); };
        std::vector<double> dp(d.t, 0.0);
        double delta = 0;
        for (int64_t j = 0; j < d.t; ++j) {
          for (int64_t e = 0; e < d.d; ++e) dp[j] += g(e) * q(2, j, e);
          delta += p[i * d.t + j] * dp[j];
        }
        for (int64_t j = 0; j < d.t; ++j) {
          const double pij = p[i * d.t + j];
          const double ds = pij * (dp[j] - delta);
          for (int64_t e = 0; e < d.d; ++e) {
            ref.dqkv[L.Qkv(0, b, h, i, e)] += scale * ds * q(1, j, e);
            ref.dqkv[L.Qkv(1, b, h, j, e)] += scale * ds * q(0, i, e);
            ref.dqkv[L.Qkv(2, b, h, j, e)] += pij * g(e);
          }
        }
      }
    }
  }
  return ref;
}

// max |got - want| <= tol * max |want|; NaN never passes.
::testing::AssertionResult NormwiseClose(const std::vector<float>& got,
                                         const std::vector<double>& want, double tol,
                                         double* rel_err) {
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= tol * scale)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs "
                                           << want[i] << " (tolerance " << tol * scale << ")";
    }
    worst = std::max(worst, err);
  }
  *rel_err = worst / scale;
  return ::testing::AssertionSuccess();
}

struct EmulationCase {
  AttentionGemmDims d;
  float scale;  // 0: 1/sqrt(D)
  PlanChoice plan;
};

struct Tolerances {
  double y, lse, dqkv;
};

void RunEmulation(const EmulationCase& ec, Operands ops, const Tolerances& tol) {
  const AttentionGemmDims& d = ec.d;
  const int64_t c = d.h * d.d;
  const float scale = ec.scale != 0.0f ? ec.scale : 1.0f / std::sqrt(float(d.d));
  std::mt19937 rng(1234u + static_cast<uint32_t>(d.t * 7 + d.h));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  HostCall call;
  call.qkv.resize(d.b * d.t * 3 * c);
  call.dy.resize(d.b * d.t * c);
  for (float& v : call.qkv) v = dist(rng);
  for (float& v : call.dy) v = dist(rng);
  call.y.assign(d.b * d.t * c, kNaN);
  call.lse.assign(d.b * d.h * d.t, kNaN);
  call.dqkv.assign(d.b * d.t * 3 * c, kNaN);
  EmulateForward(d, scale, ec.plan, ops, &call);
  EmulateBackward(d, scale, ec.plan, ops, &call);
  const Reference ref = Float64Attention(d, scale, call.qkv, call.dy);
  const AttentionGemmPlan fwd = ec.plan.For(d, kForwardScoreBuffers);
  const AttentionGemmPlan bwd = ec.plan.For(d, kBackwardScoreBuffers);
  char what[200];
  std::snprintf(what, sizeof(what),
                "%s B=%lld H=%lld T=%lld D=%lld causal=%d; blocks x chunks per sequence: "
                "forward %lld x %lld, backward %lld x %lld",
                Name(ops), (long long)d.b, (long long)d.h, (long long)d.t,
                (long long)d.d, int(d.causal), (long long)fwd.blocks, (long long)fwd.chunks,
                (long long)bwd.blocks, (long long)bwd.chunks);
  SCOPED_TRACE(what);
  double e_y = 0, e_lse = 0, e_dqkv = 0;
  EXPECT_TRUE(NormwiseClose(call.y, ref.y, tol.y, &e_y)) << "y";
  EXPECT_TRUE(NormwiseClose(call.lse, ref.lse, tol.lse, &e_lse)) << "lse";
  EXPECT_TRUE(NormwiseClose(call.dqkv, ref.dqkv, tol.dqkv, &e_dqkv)) << "dqkv";
  std::printf("%s: normwise error y %.2e, lse %.2e, dqkv %.2e\n", what, e_y, e_lse, e_dqkv);
}

std::vector<EmulationCase> EmulationCases() {
  std::vector<EmulationCase> out;
  const AttentionGemmDims small{2, 37, 3, 8, false};
  // Score bytes per row of 37 keys (pitch 40): forward 160, backward 320.
  for (int causal = 0; causal < 2; ++causal) {
    AttentionGemmDims d = small;
    d.causal = causal != 0;
    // The kernels' plan: one block, one chunk at this T.
    out.push_back({d, 0.0f, PlanChoice{}});
    // Small budgets and causal blocks of 10 rows: several blocks (the last
    // one shorter) and chunks (of 1 or 2 heads, the last one smaller); the
    // trace prints each direction's plan.
    out.push_back({d, 0.3f, PlanChoice{size_t{320} * 10 * 2, 10}});
    out.push_back({d, 0.0f, PlanChoice{size_t{160} * 10 * 2, 10}});
    out.push_back({d, 0.0f, PlanChoice{size_t{320} * 37 * 2, 10}});
    // GPT-2's head dim; causal: blocks of 256 and 44 rows.
    out.push_back({{1, 300, 2, 64, d.causal}, 0.0f, PlanChoice{}});
  }
  return out;
}

// Measured: at most ~1e-6 of the largest element (y, lse, dqkv).
TEST(AttentionGemmEmulationTest, Fp32ProductsMatchFloat64) {
  for (const EmulationCase& ec : EmulationCases()) {
    RunEmulation(ec, Operands::kFp32, {3e-6, 3e-6, 3e-6});
  }
}

// Measured: rounded operands up to ~8e-4 of the largest element (y, dqkv)
// and ~2e-4 (lse); truncated ones up to ~2.7e-3 and ~6e-4. These bounds are
// the GPU test's TF32 tolerances.
TEST(AttentionGemmEmulationTest, Tf32ProductsStayWithinTheGpuTestsTolerances) {
  for (const EmulationCase& ec : EmulationCases()) {
    for (Operands ops : {Operands::kTf32Nearest, Operands::kTf32Truncated}) {
      RunEmulation(ec, ops, {1e-2, 3e-3, 1e-2});
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

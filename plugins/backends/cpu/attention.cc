// Multi-head self-attention (ABI 1.2), llm.c's packed qkv layout. The
// forward saves each row's logsumexp; the backward recomputes probabilities
// from it (flash-attention style), so no [T,T] matrix is ever kept.
//
// Threads split the B x H heads; each head's Q, K^T, V are first copied into
// its thread's fp32 buffers (K and V transposed so every inner loop runs
// along contiguous memory and vectorises), and everything accumulates in
// fp32; exponentials are gelu_vector.h's vectorised exp. A head is computed
// by one thread in a fixed order, so results do not depend on the thread
// count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/gelu_vector.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// One head's working set, reused across the heads a thread computes.
struct HeadBuffers {
  std::vector<float> q, kt, v, vt, y, score, prob, dq, dk, dv;
  void Resize(int64_t t, int64_t d) {
    for (auto* b : {&q, &kt, &v, &vt, &y, &dq, &dk, &dv}) b->resize(t * d);
    score.resize(t);
    prob.resize(t);
  }
};

// Offsets into the packed rows of one call's shape.
struct Layout {
  backend::AttentionShape s;
  // Element offset of head hi's part of q (which 0), k (1) or v (2) in the
  // packed [B,T,3C] row (bi, ti); a [B,T,C] row; an lse [B,H,T] element.
  int64_t Qkv(int64_t bi, int64_t ti, int which, int64_t hi) const {
    return (bi * s.t + ti) * 3 * s.c + which * s.c + hi * s.d;
  }
  int64_t Row(int64_t bi, int64_t ti, int64_t hi) const {
    return (bi * s.t + ti) * s.c + hi * s.d;
  }
  int64_t Lse(int64_t bi, int64_t hi, int64_t ti) const {
    return (bi * s.h + hi) * s.t + ti;
  }
  // Keys visible from query position ti: [0, Visible(ti)).
  int64_t Visible(int64_t ti) const { return s.causal ? ti + 1 : s.t; }
};

// Head (bi, hi)'s rows of one of q/k/v as [T, D]; `transposed` stores [D, T].
void LoadHead(const Layout& L, const MNT_Tensor& qkv, int64_t bi, int64_t hi, int which,
              bool transposed, float* row, float* dst) {
  const int64_t t = L.s.t, d = L.s.d;
  for (int64_t ti = 0; ti < t; ++ti) {
    float* r = transposed ? row : dst + ti * d;
    ReadF32Range(qkv, L.Qkv(bi, ti, which, hi), d, r);
    if (transposed) {
      for (int64_t e = 0; e < d; ++e) dst[e * t + ti] = r[e];
    }
  }
}

// score[j] = scale * q . k_j for j < n, from K^T [D, T]; returns the max.
// Keys in blocks of kKeys whose partial dot products stay in registers over
// the D loop; each score still sums its products in e order.
float Scores(const float* q, const float* kt, int64_t t, int64_t d, int64_t n, float scale,
             float* score) {
  constexpr int64_t kKeys = 16;
  int64_t j0 = 0;
  for (; j0 + kKeys <= n; j0 += kKeys) {
    float acc[kKeys] = {};
    for (int64_t e = 0; e < d; ++e) {
      const float qe = q[e];
      const float* k = kt + e * t + j0;
#pragma omp simd
      for (int64_t j = 0; j < kKeys; ++j) acc[j] += qe * k[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < kKeys; ++j) score[j0 + j] = acc[j] * scale;
  }
  if (j0 < n) {
    const int64_t rest = n - j0;
    float acc[kKeys] = {};
    for (int64_t e = 0; e < d; ++e) {
      const float qe = q[e];
      const float* k = kt + e * t + j0;
      for (int64_t j = 0; j < rest; ++j) acc[j] += qe * k[j];
    }
    for (int64_t j = 0; j < rest; ++j) score[j0 + j] = acc[j] * scale;
  }
  float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < n; ++j) top = std::max(top, score[j]);
  return top;
}

// p[j] = exp(p[j] - shift) for j < n (the vectorised exp of gelu_vector.h);
// returns their sum.
float ExpShifted(float* p, int64_t n, float shift) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    p[j] = ExpClamped(p[j] - shift);
    sum += p[j];
  }
  return sum;
}

}  // namespace

Status CpuBackend::AttentionForward(const backend::AttentionForwardCall& a) {
  const Layout L{a.shape};
  const backend::AttentionShape s = a.shape;
  const int64_t heads = s.b * s.h;
  const int threads = ThreadsFor(heads * s.t * s.d);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    HeadBuffers buf;
    buf.Resize(s.t, s.d);
    std::vector<float> row(s.d), lse(s.t);
#pragma omp for schedule(static)
    for (int64_t head = 0; head < heads; ++head) {
      const int64_t bi = head / s.h, hi = head % s.h;
      LoadHead(L, *a.qkv, bi, hi, 0, false, row.data(), buf.q.data());
      LoadHead(L, *a.qkv, bi, hi, 1, true, row.data(), buf.kt.data());
      LoadHead(L, *a.qkv, bi, hi, 2, false, row.data(), buf.v.data());
      for (int64_t ti = 0; ti < s.t; ++ti) {
        const int64_t n = L.Visible(ti);
        float* score = buf.score.data();
        const float max = Scores(buf.q.data() + ti * s.d, buf.kt.data(), s.t, s.d, n, s.scale,
                                 score);
        const float sum = ExpShifted(score, n, max);
        const float inv = 1.0f / sum;
        float* y = buf.y.data() + ti * s.d;
        std::fill(y, y + s.d, 0.0f);
        for (int64_t j = 0; j < n; ++j) {
          const float w = score[j] * inv;
          const float* v = buf.v.data() + j * s.d;
#pragma omp simd
          for (int64_t e = 0; e < s.d; ++e) y[e] += w * v[e];
        }
        WriteF32Range(y, *a.y, L.Row(bi, ti, hi), s.d);
        lse[ti] = max + std::log(sum);
      }
      WriteF32Range(lse.data(), *a.lse, L.Lse(bi, hi, 0), s.t);
    }
  }
  return Status::Ok();
}

Status CpuBackend::AttentionBackward(const backend::AttentionBackwardCall& a) {
  const Layout L{a.shape};
  const backend::AttentionShape s = a.shape;
  const int64_t heads = s.b * s.h;
  const int threads = ThreadsFor(heads * s.t * s.d);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    HeadBuffers buf;
    buf.Resize(s.t, s.d);
    std::vector<float> row(s.d), gy(s.d), y(s.d), lse(s.t);
#pragma omp for schedule(static)
    for (int64_t head = 0; head < heads; ++head) {
      const int64_t bi = head / s.h, hi = head % s.h;
      LoadHead(L, *a.qkv, bi, hi, 0, false, row.data(), buf.q.data());
      LoadHead(L, *a.qkv, bi, hi, 1, true, row.data(), buf.kt.data());
      LoadHead(L, *a.qkv, bi, hi, 1, false, row.data(), buf.v.data());  // K rows
      LoadHead(L, *a.qkv, bi, hi, 2, true, row.data(), buf.vt.data());
      ReadF32Range(*a.lse, L.Lse(bi, hi, 0), s.t, lse.data());
      std::fill(buf.dk.begin(), buf.dk.end(), 0.0f);
      std::fill(buf.dv.begin(), buf.dv.end(), 0.0f);
      const float* k_rows = buf.v.data();
      for (int64_t ti = 0; ti < s.t; ++ti) {
        const int64_t n = L.Visible(ti);
        const float* q = buf.q.data() + ti * s.d;
        ReadF32Range(*a.dy, L.Row(bi, ti, hi), s.d, gy.data());
        ReadF32Range(*a.y, L.Row(bi, ti, hi), s.d, y.data());
        // dsoftmax: ds_j = p_j (dp_j - sum_k p_k dp_k), and
        // sum_k p_k dp_k = dy . y.
        float dy_dot_y = 0.0f;
#pragma omp simd reduction(+ : dy_dot_y)
        for (int64_t e = 0; e < s.d; ++e) dy_dot_y += gy[e] * y[e];
        float* prob = buf.prob.data();
        Scores(q, buf.kt.data(), s.t, s.d, n, s.scale, prob);
        ExpShifted(prob, n, lse[ti]);
        float* ds = buf.score.data();  // dp_j = dy . v_j, from V^T
        Scores(gy.data(), buf.vt.data(), s.t, s.d, n, 1.0f, ds);
        for (int64_t j = 0; j < n; ++j) ds[j] = s.scale * prob[j] * (ds[j] - dy_dot_y);
        float* dq = buf.dq.data() + ti * s.d;
        std::fill(dq, dq + s.d, 0.0f);
        for (int64_t j = 0; j < n; ++j) {
          const float dsj = ds[j], pj = prob[j];
          const float* k = k_rows + j * s.d;
          float* dk = buf.dk.data() + j * s.d;
          float* dv = buf.dv.data() + j * s.d;
#pragma omp simd
          for (int64_t e = 0; e < s.d; ++e) {
            dq[e] += dsj * k[e];
            dk[e] += dsj * q[e];
            dv[e] += pj * gy[e];
          }
        }
      }
      for (int64_t ti = 0; ti < s.t; ++ti) {
        WriteF32Range(buf.dq.data() + ti * s.d, *a.dqkv, L.Qkv(bi, ti, 0, hi), s.d);
        WriteF32Range(buf.dk.data() + ti * s.d, *a.dqkv, L.Qkv(bi, ti, 1, hi), s.d);
        WriteF32Range(buf.dv.data() + ti * s.d, *a.dqkv, L.Qkv(bi, ti, 2, hi), s.d);
      }
    }
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

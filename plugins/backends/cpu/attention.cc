// Multi-head self-attention (ABI 1.2), llm.c's packed qkv layout. The
// forward saves each row's logsumexp; the backward recomputes probabilities
// from it (flash-attention style), so no [T,T] matrix outlives a call.
//
// Each head is a handful of GEMMs on the backend's sgemm (oneDNN's, or
// OpenBLAS's under gemm=reference), taken a block of kRows query rows at a
// time: a causal block sees only the keys up to its last row, so the GEMMs
// skip most of the masked upper triangle. Between them, the softmax and its
// derivative run row by row with vector_loops.h's exp. Threads
// split the B x H heads; a thread copies its head's Q, K, V into fp32
// buffers (16-bit storage widened once) and computes it alone, its GEMMs
// single-threaded inside the region, so results are the same run to run
// for a given thread count. The copy packs each operand contiguously (ld =
// D): GEMMs reading fp32 heads in place with the packed row length 3C as
// leading dimension measured 2.7% slower on the 8-layer GPT.
// With compute TF32 (ABI 1.8) every product's operands are rounded to TF32
// first, as a tensor core rounds them (the CUDA backend's GEMM path): q, k,
// v and dy once per head, P before P V and P^T dY, dS before dS K and
// dS^T Q; the softmax, its derivative and the lse use the unrounded values.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/convert_arrays.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/backends/cpu/vector_loops.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Query rows per block: big enough for GEMM-sized products, small enough
// that a causal block wastes little on masked keys.
constexpr int64_t kRows = 64;

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
  // Keys any row of the block starting at r0 sees.
  int64_t BlockKeys(int64_t r0, int64_t rows) const {
    return s.causal ? r0 + rows : s.t;
  }
};

// Head (bi, hi)'s rows of q/k/v (`which` 0/1/2) as fp32 [T, D].
void LoadHead(const Layout& L, const MNT_Tensor& qkv, int64_t bi, int64_t hi, int which,
              float* dst) {
  for (int64_t ti = 0; ti < L.s.t; ++ti) {
    ReadF32Range(qkv, L.Qkv(bi, ti, which, hi), L.s.d, dst + ti * L.s.d);
  }
}

// Head (bi, hi)'s rows of a [B,T,C] tensor as fp32 [T, D], and back.
void LoadRows(const Layout& L, const MNT_Tensor& x, int64_t bi, int64_t hi, float* dst) {
  for (int64_t ti = 0; ti < L.s.t; ++ti) {
    ReadF32Range(x, L.Row(bi, ti, hi), L.s.d, dst + ti * L.s.d);
  }
}

// p[j] = exp(scale * p[j] - shift) for j < n, 0 for n <= j < width (the
// masked keys); returns the sum of the first n.
float ExpScaled(float* p, int64_t n, int64_t width, float scale, float shift) {
  const double sum = ExpShiftedLoop(p, p, n, scale, shift);
  std::fill(p + n, p + width, 0.0f);
  return static_cast<float>(sum);
}

float ScaledMax(const float* p, int64_t n, float scale) {
  float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < n; ++j) top = std::max(top, scale * p[j]);
  return top;
}

// The heads a call's threads split (never more threads than heads).
int HeadThreads(const backend::AttentionShape& s) {
  return static_cast<int>(std::min<int64_t>(ThreadsFor(s.b * s.h * s.t * s.d), s.b * s.h));
}

}  // namespace

Status CpuBackend::AttentionForward(const backend::AttentionForwardCall& a) {
  const Layout L{a.shape};
  const backend::AttentionShape s = a.shape;
  const int64_t heads = s.b * s.h, t = s.t, d = s.d;
  const int threads = HeadThreads(s);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> q(t * d), k(t * d), v(t * d), y(t * d), p(kRows * t), lse(t);
#pragma omp for schedule(static)
    for (int64_t head = 0; head < heads; ++head) {
      const int64_t bi = head / s.h, hi = head % s.h;
      LoadHead(L, *a.qkv, bi, hi, 0, q.data());
      LoadHead(L, *a.qkv, bi, hi, 1, k.data());
      LoadHead(L, *a.qkv, bi, hi, 2, v.data());
      for (float* x : {q.data(), k.data(), v.data()}) RoundArrayToCompute(x, t * d, s.compute);
      for (int64_t r0 = 0; r0 < t; r0 += kRows) {
        const int64_t rows = std::min(kRows, t - r0), keys = L.BlockKeys(r0, rows);
        // P = softmax(scale Q K^T) over each row's visible keys.
        Sgemm(false, true, rows, keys, d, q.data() + r0 * d, d, k.data(), d, 0.0f, p.data(),
              keys);
        for (int64_t i = 0; i < rows; ++i) {
          float* row = p.data() + i * keys;
          const int64_t n = L.Visible(r0 + i);
          const float max = ScaledMax(row, n, s.scale);
          const float sum = ExpScaled(row, n, keys, s.scale, max);
          const float inv = 1.0f / sum;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) row[j] *= inv;
          lse[r0 + i] = max + std::log(sum);
        }
        RoundArrayToCompute(p.data(), rows * keys, s.compute);
        // Y = P V.
        Sgemm(false, false, rows, d, keys, p.data(), keys, v.data(), d, 0.0f,
              y.data() + r0 * d, d);
      }
      for (int64_t ti = 0; ti < t; ++ti) {
        WriteF32Range(y.data() + ti * d, *a.y, L.Row(bi, ti, hi), d);
      }
      WriteF32Range(lse.data(), *a.lse, L.Lse(bi, hi, 0), t);
    }
  }
  return Status::Ok();
}

Status CpuBackend::AttentionBackward(const backend::AttentionBackwardCall& a) {
  const Layout L{a.shape};
  const backend::AttentionShape s = a.shape;
  const int64_t heads = s.b * s.h, t = s.t, d = s.d;
  const bool tf32 = s.compute == MNT_COMPUTE_TF32;
  const int threads = HeadThreads(s);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> q(t * d), k(t * d), v(t * d), gy(t * d), y(t * d), dq(t * d),
        dk(t * d), dv(t * d), p(kRows * t), ds(kRows * t), lse(t), dy_dot_y(t),
        gy_rounded(tf32 ? t * d : 0);
#pragma omp for schedule(static)
    for (int64_t head = 0; head < heads; ++head) {
      const int64_t bi = head / s.h, hi = head % s.h;
      LoadHead(L, *a.qkv, bi, hi, 0, q.data());
      LoadHead(L, *a.qkv, bi, hi, 1, k.data());
      LoadHead(L, *a.qkv, bi, hi, 2, v.data());
      LoadRows(L, *a.dy, bi, hi, gy.data());
      LoadRows(L, *a.y, bi, hi, y.data());
      for (float* x : {q.data(), k.data(), v.data()}) RoundArrayToCompute(x, t * d, s.compute);
      // dy . y below from the unrounded dy; the products from the rounded copy.
      const float* gy_products = gy.data();
      if (tf32) {
        std::copy(gy.begin(), gy.end(), gy_rounded.begin());
        RoundArrayToCompute(gy_rounded.data(), t * d, s.compute);
        gy_products = gy_rounded.data();
      }
      ReadF32Range(*a.lse, L.Lse(bi, hi, 0), t, lse.data());
      // The softmax's derivative needs sum_j p_j dp_j per row, which is dy . y.
      for (int64_t ti = 0; ti < t; ++ti) {
        const float* g = gy.data() + ti * d;
        const float* o = y.data() + ti * d;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t e = 0; e < d; ++e) dot += g[e] * o[e];
        dy_dot_y[ti] = dot;
      }
      std::fill(dk.begin(), dk.end(), 0.0f);
      std::fill(dv.begin(), dv.end(), 0.0f);
      for (int64_t r0 = 0; r0 < t; r0 += kRows) {
        const int64_t rows = std::min(kRows, t - r0), keys = L.BlockKeys(r0, rows);
        const float* q_blk = q.data() + r0 * d;
        const float* gy_blk = gy_products + r0 * d;
        // P recomputed from the saved logsumexp; masked keys get 0.
        Sgemm(false, true, rows, keys, d, q_blk, d, k.data(), d, 0.0f, p.data(), keys);
        for (int64_t i = 0; i < rows; ++i) {
          ExpScaled(p.data() + i * keys, L.Visible(r0 + i), keys, s.scale, lse[r0 + i]);
        }
        // dP = dY V^T.
        Sgemm(false, true, rows, keys, d, gy_blk, d, v.data(), d, 0.0f, ds.data(), keys);
        // dS = scale P (dP - dy . y), zero where P is.
        for (int64_t i = 0; i < rows; ++i) {
          const float* pr = p.data() + i * keys;
          float* dsr = ds.data() + i * keys;
          const float shift = dy_dot_y[r0 + i];
#pragma omp simd
          for (int64_t j = 0; j < keys; ++j) dsr[j] = s.scale * pr[j] * (dsr[j] - shift);
        }
        // dV += P^T dY (P as a product operand from here on).
        RoundArrayToCompute(p.data(), rows * keys, s.compute);
        Sgemm(true, false, keys, d, rows, p.data(), keys, gy_blk, d, 1.0f, dv.data(), d);
        RoundArrayToCompute(ds.data(), rows * keys, s.compute);
        // dQ = dS K; dK += dS^T Q.
        Sgemm(false, false, rows, d, keys, ds.data(), keys, k.data(), d, 0.0f,
              dq.data() + r0 * d, d);
        Sgemm(true, false, keys, d, rows, ds.data(), keys, q_blk, d, 1.0f, dk.data(), d);
      }
      for (int64_t ti = 0; ti < t; ++ti) {
        WriteF32Range(dq.data() + ti * d, *a.dqkv, L.Qkv(bi, ti, 0, hi), d);
        WriteF32Range(dk.data() + ti * d, *a.dqkv, L.Qkv(bi, ti, 1, hi), d);
        WriteF32Range(dv.data() + ti * d, *a.dqkv, L.Qkv(bi, ti, 2, hi), d);
      }
    }
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

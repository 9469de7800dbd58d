// Multi-head self-attention (ABI 1.2), llm.c's packed qkv layout. The
// forward saves each row's logsumexp; the backward recomputes probabilities
// from it (flash-attention style), so no [T,T] matrix is ever kept. Dot
// products accumulate in double: this is the reference for other backends.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Offsets into the packed rows of one call's shape.
struct Layout {
  backend::AttentionShape s;
  // A packed [B,T,3C] row / a [B,T,C] row / an lse [B,H,T] element.
  int64_t QkvRow(int64_t bi, int64_t ti) const { return (bi * s.t + ti) * 3 * s.c; }
  int64_t Row(int64_t bi, int64_t ti) const { return (bi * s.t + ti) * s.c; }
  int64_t Lse(int64_t bi, int64_t hi, int64_t ti) const {
    return (bi * s.h + hi) * s.t + ti;
  }
  // Keys visible from query position ti: [0, Visible(ti)).
  int64_t Visible(int64_t ti) const { return s.causal ? ti + 1 : s.t; }
};

double Dot(const float* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

}  // namespace

Status CpuBackend::AttentionForward(const backend::AttentionForwardCall& a) {
  const Layout L{a.shape};
  const backend::AttentionShape& s = a.shape;
  const std::vector<float> in = ReadF32(*a.qkv);
  std::vector<float> out(s.b * s.t * s.c), lse_out(s.b * s.h * s.t);
  std::vector<double> score(s.t), acc(s.d);
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t hi = 0; hi < s.h; ++hi) {
      for (int64_t ti = 0; ti < s.t; ++ti) {
        const float* q = in.data() + L.QkvRow(bi, ti) + hi * s.d;
        const int64_t n = L.Visible(ti);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          const float* k = in.data() + L.QkvRow(bi, j) + s.c + hi * s.d;
          score[j] = s.scale * Dot(q, k, s.d);
          max = std::max(max, score[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) {
          score[j] = std::exp(score[j] - max);
          sum += score[j];
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const float* v = in.data() + L.QkvRow(bi, j) + 2 * s.c + hi * s.d;
          const double w = score[j] / sum;
          for (int64_t e = 0; e < s.d; ++e) acc[e] += w * v[e];
        }
        float* yr = out.data() + L.Row(bi, ti) + hi * s.d;
        for (int64_t e = 0; e < s.d; ++e) yr[e] = static_cast<float>(acc[e]);
        lse_out[L.Lse(bi, hi, ti)] = static_cast<float>(max + std::log(sum));
      }
    }
  }
  WriteF32(out.data(), *a.y);
  WriteF32(lse_out.data(), *a.lse);
  return Status::Ok();
}

Status CpuBackend::AttentionBackward(const backend::AttentionBackwardCall& a) {
  const Layout L{a.shape};
  const backend::AttentionShape& s = a.shape;
  const std::vector<float> in = ReadF32(*a.qkv), g = ReadF32(*a.dy),
                           out = ReadF32(*a.y), l = ReadF32(*a.lse);
  std::vector<double> grad(in.size(), 0.0);
  std::vector<double> prob(s.t), dscore(s.t);
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t hi = 0; hi < s.h; ++hi) {
      for (int64_t ti = 0; ti < s.t; ++ti) {
        const int64_t qo = L.QkvRow(bi, ti) + hi * s.d;
        const float* q = in.data() + qo;
        const float* gy = g.data() + L.Row(bi, ti) + hi * s.d;
        const float* yr = out.data() + L.Row(bi, ti) + hi * s.d;
        const double row_lse = l[L.Lse(bi, hi, ti)];
        // dsoftmax: ds_j = p_j (dp_j - sum_k p_k dp_k), and
        // sum_k p_k dp_k = dy . y.
        const double dy_dot_y = Dot(gy, yr, s.d);
        const int64_t n = L.Visible(ti);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t ko = L.QkvRow(bi, j) + s.c + hi * s.d;
          const float* k = in.data() + ko;
          const float* v = in.data() + ko + s.c;
          prob[j] = std::exp(s.scale * Dot(q, k, s.d) - row_lse);
          dscore[j] = prob[j] * (Dot(gy, v, s.d) - dy_dot_y);
        }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t ko = L.QkvRow(bi, j) + s.c + hi * s.d;
          const float* k = in.data() + ko;
          const double ds = s.scale * dscore[j];
          for (int64_t e = 0; e < s.d; ++e) {
            grad[qo + e] += ds * k[e];
            grad[ko + e] += ds * q[e];
            grad[ko + s.c + e] += prob[j] * gy[e];
          }
        }
      }
    }
  }
  std::vector<float> result(grad.begin(), grad.end());
  WriteF32(result.data(), *a.dqkv);
  return Status::Ok();
}

}  // namespace mnt::cpu

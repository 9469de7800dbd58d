// Multi-head self-attention (ABI 1.2), llm.c's packed qkv layout. The
// forward saves each row's logsumexp; the backward recomputes probabilities
// from it (flash-attention style), so no [T,T] matrix is ever kept. Dot
// products accumulate in double: this is the reference for other backends.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "plugins/backends/cpu/ops.h"
#include "plugins/backends/cpu/tensor_io.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

struct AttentionShape {
  int64_t b, t, c, h, d;
  float scale;
  bool causal;
  // Offsets into a packed [B,T,3C] row / a [B,T,C] row.
  int64_t QkvRow(int64_t bi, int64_t ti) const { return (bi * t + ti) * 3 * c; }
  int64_t Row(int64_t bi, int64_t ti) const { return (bi * t + ti) * c; }
  int64_t Lse(int64_t bi, int64_t hi, int64_t ti) const {
    return (bi * h + hi) * t + ti;
  }
  // Keys visible from query position ti: [0, Visible(ti)).
  int64_t Visible(int64_t ti) const { return causal ? ti + 1 : t; }
};

Status CheckShapes(const OpCall& call, const Operand& qkv,
                   const MNT_AttentionParams& p, AttentionShape* s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(qkv));
  MNT_RETURN_IF_ERROR(call.ExpectRank(qkv, 3));
  if (qkv->dims[2] % 3 != 0) {
    return call.Invalid(sdk::Format("%s is %s, last dimension must be 3*C",
                                    qkv.label.c_str(), sdk::Describe(*qkv).c_str()));
  }
  s->b = qkv->dims[0];
  s->t = qkv->dims[1];
  s->c = qkv->dims[2] / 3;
  if (p.num_heads <= 0 || s->c % p.num_heads != 0) {
    return call.Invalid(sdk::Format(
        "num_heads %d must be positive and divide C=%lld", p.num_heads,
        (long long)s->c));
  }
  if (!(p.scale >= 0.0f) || std::isinf(p.scale)) {
    return call.Invalid(sdk::Format("scale %g must be finite and >= 0 (0 = 1/sqrt(D))",
                                    p.scale));
  }
  s->h = p.num_heads;
  s->d = s->c / s->h;
  s->scale = p.scale != 0.0f ? p.scale
                             : static_cast<float>(1.0 / std::sqrt(double(s->d)));
  s->causal = p.causal != 0;
  return Status::Ok();
}

Status ExpectBTC(const OpCall& call, const Operand& t, const AttentionShape& s) {
  MNT_RETURN_IF_ERROR(call.ExpectFloat(t));
  const int64_t dims[3] = {s.b, s.t, s.c};
  return call.ExpectDims(t, 3, dims, sdk::Format("[B=%lld, T=%lld, C=%lld]",
                                                 (long long)s.b, (long long)s.t,
                                                 (long long)s.c));
}

Status ExpectLse(const OpCall& call, const Operand& t, const AttentionShape& s) {
  MNT_RETURN_IF_ERROR(call.ExpectDType(t, MNT_DTYPE_F32));
  const int64_t dims[3] = {s.b, s.h, s.t};
  return call.ExpectDims(t, 3, dims, sdk::Format("f32[B=%lld, H=%lld, T=%lld]",
                                                 (long long)s.b, (long long)s.h,
                                                 (long long)s.t));
}

double Dot(const float* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

Status ReadParams(const OpCall& call, const MNT_AttentionParams** p) {
  return call.Params("MNT_AttentionParams", MNT_AttentionParams_STRUCT_SIZE,
                     false, p);
}

}  // namespace

Status RunAttentionForward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(1, 1, 2, 2));
  const MNT_AttentionParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  Operand qkv, y, lse;
  MNT_RETURN_IF_ERROR(call.Input(0, "qkv", &qkv));
  MNT_RETURN_IF_ERROR(call.Output(0, "y", &y));
  MNT_RETURN_IF_ERROR(call.Output(1, "lse", &lse));
  AttentionShape s;
  MNT_RETURN_IF_ERROR(CheckShapes(call, qkv, *p, &s));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, y, s));
  MNT_RETURN_IF_ERROR(ExpectLse(call, lse, s));

  const std::vector<float> in = ReadF32(*qkv);
  std::vector<float> out(s.b * s.t * s.c), lse_out(s.b * s.h * s.t);
  std::vector<double> score(s.t), acc(s.d);
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t hi = 0; hi < s.h; ++hi) {
      for (int64_t ti = 0; ti < s.t; ++ti) {
        const float* q = in.data() + s.QkvRow(bi, ti) + hi * s.d;
        const int64_t n = s.Visible(ti);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          const float* k = in.data() + s.QkvRow(bi, j) + s.c + hi * s.d;
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
          const float* v = in.data() + s.QkvRow(bi, j) + 2 * s.c + hi * s.d;
          const double w = score[j] / sum;
          for (int64_t e = 0; e < s.d; ++e) acc[e] += w * v[e];
        }
        float* yr = out.data() + s.Row(bi, ti) + hi * s.d;
        for (int64_t e = 0; e < s.d; ++e) yr[e] = static_cast<float>(acc[e]);
        lse_out[s.Lse(bi, hi, ti)] = static_cast<float>(max + std::log(sum));
      }
    }
  }
  WriteF32(out.data(), *y);
  WriteF32(lse_out.data(), *lse);
  return Status::Ok();
}

Status RunAttentionBackward(const OpCall& call) {
  MNT_RETURN_IF_ERROR(call.CheckCounts(4, 4, 1, 1));
  const MNT_AttentionParams* p;
  MNT_RETURN_IF_ERROR(ReadParams(call, &p));
  Operand dy, qkv, y, lse, dqkv;
  MNT_RETURN_IF_ERROR(call.Input(0, "dy", &dy));
  MNT_RETURN_IF_ERROR(call.Input(1, "qkv", &qkv));
  MNT_RETURN_IF_ERROR(call.Input(2, "y", &y));
  MNT_RETURN_IF_ERROR(call.Input(3, "lse", &lse));
  MNT_RETURN_IF_ERROR(call.Output(0, "dqkv", &dqkv));
  AttentionShape s;
  MNT_RETURN_IF_ERROR(CheckShapes(call, qkv, *p, &s));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, dy, s));
  MNT_RETURN_IF_ERROR(ExpectBTC(call, y, s));
  MNT_RETURN_IF_ERROR(ExpectLse(call, lse, s));
  MNT_RETURN_IF_ERROR(call.ExpectFloat(dqkv));
  MNT_RETURN_IF_ERROR(call.ExpectDims(dqkv, 3, qkv->dims, sdk::Describe(*qkv)));

  const std::vector<float> in = ReadF32(*qkv), g = ReadF32(*dy),
                           out = ReadF32(*y), l = ReadF32(*lse);
  std::vector<double> grad(in.size(), 0.0);
  std::vector<double> prob(s.t), dscore(s.t);
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t hi = 0; hi < s.h; ++hi) {
      for (int64_t ti = 0; ti < s.t; ++ti) {
        const int64_t qo = s.QkvRow(bi, ti) + hi * s.d;
        const float* q = in.data() + qo;
        const float* gy = g.data() + s.Row(bi, ti) + hi * s.d;
        const float* yr = out.data() + s.Row(bi, ti) + hi * s.d;
        const double row_lse = l[s.Lse(bi, hi, ti)];
        // dsoftmax: ds_j = p_j (dp_j - sum_k p_k dp_k), and
        // sum_k p_k dp_k = dy . y.
        const double dy_dot_y = Dot(gy, yr, s.d);
        const int64_t n = s.Visible(ti);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t ko = s.QkvRow(bi, j) + s.c + hi * s.d;
          const float* k = in.data() + ko;
          const float* v = in.data() + ko + s.c;
          prob[j] = std::exp(s.scale * Dot(q, k, s.d) - row_lse);
          dscore[j] = prob[j] * (Dot(gy, v, s.d) - dy_dot_y);
        }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t ko = s.QkvRow(bi, j) + s.c + hi * s.d;
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
  WriteF32(result.data(), *dqkv);
  return Status::Ok();
}

}  // namespace mnt::cpu

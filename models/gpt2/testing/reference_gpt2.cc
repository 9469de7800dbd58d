#include "models/gpt2/testing/reference_gpt2.h"

#include <algorithm>
#include <cmath>

namespace mnt::gpt2::testing {
namespace {

using Vec = std::vector<double>;

// y[n, :] = layernorm(x[n, :]) * w + b, biased variance, eps 1e-5.
Vec LayerNorm(const Vec& x, const double* w, const double* b, int64_t rows,
              int64_t c) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < c; ++j) mu += x[r * c + j];
    mu /= c;
    for (int64_t j = 0; j < c; ++j) var += (x[r * c + j] - mu) * (x[r * c + j] - mu);
    const double rs = 1.0 / std::sqrt(var / c + 1e-5);
    for (int64_t j = 0; j < c; ++j) y[r * c + j] = (x[r * c + j] - mu) * rs * w[j] + b[j];
  }
  return y;
}

// y[rows, out] = x[rows, in] @ w[out, in]^T + b (b may be null).
Vec Linear(const Vec& x, const double* w, const double* b, int64_t rows,
           int64_t in, int64_t out) {
  Vec y(rows * out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? b[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

double Gelu(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace

double ReferenceLoss(const RefConfig& c, const std::vector<Vec>& p,
                     const std::vector<int>& ids, const std::vector<int>& targets,
                     int64_t batch, int64_t t, Vec* logits_out) {
  const int64_t C = c.d_model, n = batch * t, H = c.n_head, D = C / H;
  Vec x(n * C);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < C; ++j)
      x[i * C + j] = p[0][ids[i] * C + j] + p[1][(i % t) * C + j];
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Vec ln1 = LayerNorm(x, &p[2][l * C], &p[3][l * C], n, C);
    const Vec qkv = Linear(ln1, &p[4][l * 3 * C * C], &p[5][l * 3 * C], n, C, 3 * C);
    Vec att(n * C, 0.0);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < t; ++i) {
          const double* q = &qkv[(b * t + i) * 3 * C + h * D];
          Vec s(i + 1);
          for (int64_t j = 0; j <= i; ++j) {
            const double* k = &qkv[(b * t + j) * 3 * C + C + h * D];
            double dot = 0;
            for (int64_t e = 0; e < D; ++e) dot += q[e] * k[e];
            s[j] = dot / std::sqrt(double(D));
          }
          const double m = *std::max_element(s.begin(), s.end());
          double sum = 0;
          for (double& v : s) sum += (v = std::exp(v - m));
          for (int64_t j = 0; j <= i; ++j) {
            const double* v = &qkv[(b * t + j) * 3 * C + 2 * C + h * D];
            for (int64_t e = 0; e < D; ++e)
              att[(b * t + i) * C + h * D + e] += s[j] / sum * v[e];
          }
        }
    const Vec proj = Linear(att, &p[6][l * C * C], &p[7][l * C], n, C, C);
    for (int64_t i = 0; i < n * C; ++i) x[i] += proj[i];
    const Vec ln2 = LayerNorm(x, &p[8][l * C], &p[9][l * C], n, C);
    Vec fc = Linear(ln2, &p[10][l * 4 * C * C], &p[11][l * 4 * C], n, C, 4 * C);
    for (double& v : fc) v = Gelu(v);
    const Vec out = Linear(fc, &p[12][l * 4 * C * C], &p[13][l * C], n, 4 * C, C);
    for (int64_t i = 0; i < n * C; ++i) x[i] += out[i];
  }
  const Vec lnf = LayerNorm(x, p[14].data(), p[15].data(), n, C);
  const Vec logits = Linear(lnf, p[0].data(), nullptr, n, C, c.padded_vocab);
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double* l = &logits[i * c.padded_vocab];
    const double m = *std::max_element(l, l + c.vocab);
    double sum = 0;
    for (int64_t v = 0; v < c.vocab; ++v) sum += std::exp(l[v] - m);
    loss += std::log(sum) + m - l[targets[i]];
  }
  if (logits_out) *logits_out = logits;
  return loss / n;
}

}  // namespace mnt::gpt2::testing

#include "plugins/conformance/optimizer_references.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/sdk/status.h"

namespace mnt::conformance {
namespace {

using LD = long double;
using sdk::Format;

const float* MapOf(bool is_signed) {
  static float maps[2][kQuantizationCodes];
  static const bool built = [] {
    BuildDynamicMap(true, maps[0]);
    BuildDynamicMap(false, maps[1]);
    return true;
  }();
  (void)built;
  return maps[is_signed ? 0 : 1];
}

// The nearest code to x by a scan in long double, ties to the lower code,
// with the signed map's sign guard.
int NearestCode(LD x, bool is_signed) {
  const float* map = MapOf(is_signed);
  int best = 0;
  LD best_d = std::numeric_limits<LD>::infinity();
  for (int c = 0; c < kQuantizationCodes; ++c) {
    const LD d = std::fabs(x - map[c]);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (is_signed && x < 0 && map[best] == 0.0f) --best;
  return best;
}

bool Finite(LD x) { return std::isfinite(static_cast<double>(x)); }

// got within tol of want, neither NaN; "" or a message naming `what[i]`.
std::string Near(const char* what, size_t i, float got, LD want, LD tol) {
  if (std::isnan(got) || !Finite(want) || std::fabs(got - want) > tol) {
    return Format("%s[%zu] = %.9g, float64 reference %.9Lg (tolerance %.3Lg)", what, i, got,
                  want, tol);
  }
  return "";
}

}  // namespace

AdamW8bitExpected AdamW8bitReference(const std::vector<float>& grad, float multiplier,
                                     const AdamW8bitState& in, const MNT_AdamWParams& p,
                                     float lr, int64_t step) {
  const size_t n = grad.size();
  const float* mmap = MapOf(true);
  const float* vmap = MapOf(false);
  const LD b1 = p.beta1, b2 = p.beta2;
  const LD bc1 = 1 - std::pow(b1, static_cast<LD>(step));
  const LD bc2 = 1 - std::pow(b2, static_cast<LD>(step));
  AdamW8bitExpected e;
  e.master.resize(n);
  e.m.resize(n);
  e.v.resize(n);
  const size_t blocks = (n + kQuantizationBlock - 1) / kQuantizationBlock;
  e.m_absmax.assign(blocks, 0);
  e.v_absmax.assign(blocks, 0);
  e.m_term_max.assign(blocks, 0);
  for (size_t i = 0; i < n; ++i) {
    const size_t b = i / kQuantizationBlock;
    const LD g = static_cast<LD>(grad[i]) * multiplier;
    const LD m0 = static_cast<LD>(mmap[in.m_codes[i]]) * in.m_absmax[b];
    const LD v0 = static_cast<LD>(vmap[in.v_codes[i]]) * in.v_absmax[b];
    e.m[i] = m0 + (1 - b1) * (g - m0);
    e.v[i] = b2 * v0 + (1 - b2) * g * g;
    const LD w = in.master[i] * (1 - static_cast<LD>(lr) * p.weight_decay);
    e.master[i] = w - static_cast<LD>(lr) / bc1 * e.m[i] / (std::sqrt(e.v[i] / bc2) + p.epsilon);
    e.m_absmax[b] = std::max(e.m_absmax[b], std::fabs(e.m[i]));
    e.m_term_max[b] =
        std::max(e.m_term_max[b], std::fabs(m0) + (1 - b1) * (std::fabs(g) + std::fabs(m0)));
    e.v_absmax[b] = std::max(e.v_absmax[b], e.v[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t b = i / kQuantizationBlock;
    e.m_codes.push_back(e.m_absmax[b] > 0 ? NearestCode(e.m[i] / e.m_absmax[b], true)
                                          : kSignedZeroCode);
    e.v_codes.push_back(e.v_absmax[b] > 0 ? NearestCode(e.v[i] / e.v_absmax[b], false) : 0);
  }
  return e;
}

std::string CompareAdamW8bit(const AdamW8bitState& in, const AdamW8bitState& got,
                             const AdamW8bitExpected& want) {
  const size_t n = want.master.size();
  if (got.master.size() != n || got.m_codes.size() != n || got.v_codes.size() != n ||
      got.m_absmax.size() != want.m_absmax.size() || got.v_absmax.size() != want.v_absmax.size()) {
    return "outputs have the wrong sizes";
  }
  for (size_t i = 0; i < n; ++i) {
    const LD change = std::fabs(want.master[i] - in.master[i]);
    const LD tol = 2e-7L * (std::fabs(in.master[i]) + std::fabs(want.master[i])) + 1e-5L * change;
    if (std::string d = Near("master", i, got.master[i], want.master[i], tol + 1e-30L); !d.empty())
      return d;
  }
  for (size_t b = 0; b < want.m_absmax.size(); ++b) {
    if (std::string d = Near("m_absmax", b, got.m_absmax[b], want.m_absmax[b],
                             1e-6L * std::max(want.m_absmax[b], want.m_term_max[b]) + 1e-37L);
        !d.empty())
      return d;
    if (std::string d = Near("v_absmax", b, got.v_absmax[b], want.v_absmax[b],
                             1e-6L * want.v_absmax[b] + 1e-37L);
        !d.empty())
      return d;
  }
  const struct {
    const char* name;
    const std::vector<uint8_t>& got;
    const std::vector<int>& want;
    const std::vector<long double>& value;
    const std::vector<long double>& absmax;
    bool is_signed;
  } moments[] = {{"m_codes", got.m_codes, want.m_codes, want.m, want.m_absmax, true},
                 {"v_codes", got.v_codes, want.v_codes, want.v, want.v_absmax, false}};
  for (const auto& mo : moments) {
    const float* map = MapOf(mo.is_signed);
    for (size_t i = 0; i < n; ++i) {
      const int g = mo.got[i], w = mo.want[i];
      if (g == w) continue;
      const LD absmax = mo.absmax[i / kQuantizationBlock];
      const LD x = absmax > 0 ? mo.value[i] / absmax : 0;
      const int lo = std::min(g, w);
      const LD mid = lo + 1 < kQuantizationCodes ? (static_cast<LD>(map[lo]) + map[lo + 1]) / 2 : 2;
      if (std::abs(g - w) != 1 || std::fabs(x - mid) > 1e-6L) {
        return Format("%s[%zu] = %d, float64 reference %d (normalized moment %.9Lg)", mo.name, i,
                      g, w, x);
      }
    }
  }
  return "";
}

AdafactorExpected AdafactorReference(const std::vector<float>& grad, float multiplier,
                                     const FactoredShape& s, const AdafactorState& in,
                                     const MNT_AdafactorParams& p, float lr, int64_t step) {
  const int64_t n = s.numel(), R = s.rows, C = s.cols;
  const LD t = static_cast<LD>(step);
  const LD beta2t = 1 - std::pow(t, static_cast<LD>(p.decay_rate));
  LD rho = lr;
  if (p.relative_step) {
    const LD min_step = p.warmup_init ? 1e-6L * t : 1e-2L;
    rho = std::min(min_step, 1 / std::sqrt(t));
  }
  LD sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += static_cast<LD>(in.master[i]) * in.master[i];
  const LD lr_t = p.scale_parameter ? rho * std::max<LD>(p.epsilon2, std::sqrt(sq / n)) : rho;
  std::vector<LD> g(n), u(n);
  for (int64_t i = 0; i < n; ++i) g[i] = static_cast<LD>(grad[i]) * multiplier;
  auto g2 = [&](int64_t i) { return g[i] * g[i] + p.epsilon1; };
  AdafactorExpected e;
  if (s.factored) {
    e.second.assign(s.row_count(), 0);
    e.col.assign(s.col_states(), 0);
    for (int64_t r = 0; r < s.row_count(); ++r) {
      LD sum = 0;
      for (int64_t j = 0; j < C; ++j) sum += g2(r * C + j);
      e.second[r] = beta2t * in.second[r] + (1 - beta2t) * sum / C;
    }
    for (int64_t b = 0; b < s.batches; ++b) {
      for (int64_t j = 0; j < C; ++j) {
        LD sum = 0;
        for (int64_t r = 0; r < R; ++r) sum += g2((b * R + r) * C + j);
        e.col[b * C + j] = beta2t * in.col[b * C + j] + (1 - beta2t) * sum / R;
      }
      LD mean = 0;
      for (int64_t r = 0; r < R; ++r) mean += e.second[b * R + r];
      mean /= R;
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t j = 0; j < C; ++j) {
          const int64_t i = (b * R + r) * C + j;
          u[i] = g[i] / std::sqrt(e.second[b * R + r] / mean) / std::sqrt(e.col[b * C + j]);
        }
      }
    }
  } else {
    e.second.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      e.second[i] = beta2t * in.second[i] + (1 - beta2t) * g2(i);
      u[i] = g[i] / std::sqrt(e.second[i]);
    }
  }
  LD usq = 0;
  for (LD x : u) usq += x * x;
  const LD denom = std::max<LD>(1, std::sqrt(usq / n) / p.clip_threshold);
  e.master.resize(n);
  if (p.beta1 != 0.0f) e.m.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    LD x = u[i] / denom * lr_t;
    if (p.beta1 != 0.0f) {
      const LD decayed = p.beta1 * static_cast<LD>(in.m[i]);
      const LD added = (1 - static_cast<LD>(p.beta1)) * x;
      e.m[i] = decayed + added;
      e.m_tolerance.push_back(2e-5L * (std::fabs(decayed) + std::fabs(added)) + 1e-30L);
      x = e.m[i];
    }
    e.master[i] = in.master[i] - p.weight_decay * lr_t * in.master[i] - x;
  }
  return e;
}

std::string CompareAdafactor(const AdafactorState& in, const AdafactorState& got,
                             const AdafactorExpected& want) {
  if (got.master.size() != want.master.size() || got.second.size() != want.second.size() ||
      got.col.size() != want.col.size() || got.m.size() != want.m.size()) {
    return "outputs have the wrong sizes";
  }
  for (size_t i = 0; i < want.second.size(); ++i) {
    if (std::string d = Near("second_moment", i, got.second[i], want.second[i],
                             2e-6L * std::fabs(want.second[i]) + 1e-37L);
        !d.empty())
      return d;
  }
  for (size_t i = 0; i < want.col.size(); ++i) {
    if (std::string d =
            Near("col_state", i, got.col[i], want.col[i], 2e-6L * std::fabs(want.col[i]) + 1e-37L);
        !d.empty())
      return d;
  }
  for (size_t i = 0; i < want.m.size(); ++i) {
    if (std::string d = Near("first_moment", i, got.m[i], want.m[i], want.m_tolerance[i]);
        !d.empty())
      return d;
  }
  for (size_t i = 0; i < want.master.size(); ++i) {
    const LD tol = 2e-7L * (std::fabs(in.master[i]) + std::fabs(want.master[i])) +
                   2e-5L * std::fabs(want.master[i] - in.master[i]) + 1e-30L;
    if (std::string d = Near("master", i, got.master[i], want.master[i], tol); !d.empty()) return d;
  }
  return "";
}

}  // namespace mnt::conformance

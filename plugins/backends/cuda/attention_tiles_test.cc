// The tiled fallback attention's bookkeeping and online softmax
// (attention_tiles.h) on the CPU: every visible (query, key) pair is visited
// by exactly one tile pair in each of the three passes, and the kernels'
// algorithm replayed in fp32 with the shared helpers (tile loops, running
// max/sum, rescaling, the two backward passes) matches a float64 reference
// within fp32 tolerances (y, lse 1e-5; dqkv 1e-4 relative to the largest,
// plus 1e-5 absolute).
#include "plugins/backends/cuda/attention_tiles.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

constexpr size_t kLimit = 48 * 1024;

TEST(AttentionTilesTest, TilesFitTheSharedMemoryLimit) {
  EXPECT_EQ(PickAttentionTile(64, kLimit, ForwardSharedBytes), 32);
  EXPECT_EQ(PickAttentionTile(64, kLimit, QueryPassSharedBytes), 32);
  EXPECT_EQ(PickAttentionTile(64, kLimit, KeyPassSharedBytes), 16);
  EXPECT_EQ(PickAttentionTile(128, kLimit, ForwardSharedBytes), 16);
  EXPECT_EQ(PickAttentionTile(100000, kLimit, ForwardSharedBytes), 0);
  for (int64_t d = 1; d <= 1500; d += 7) {
    for (auto bytes : {ForwardSharedBytes, KeyPassSharedBytes, QueryPassSharedBytes}) {
      const int64_t tile = PickAttentionTile(d, kLimit, bytes);
      ASSERT_GT(tile, 0) << d;
      EXPECT_LE(bytes(tile, d), kLimit) << d;
      if (tile < 32) {
        EXPECT_GT(bytes(2 * tile, d), kLimit) << d;  // the largest that fits
      }
    }
  }
}

TEST(AttentionTilesTest, OnlineSoftmaxStartsEmptyAndRescales) {
  float m = -INFINITY;
  EXPECT_EQ(OnlineSoftmaxRescale(&m, 2.0f), 0.0f);
  EXPECT_EQ(m, 2.0f);
  EXPECT_EQ(OnlineSoftmaxRescale(&m, 1.0f), 1.0f);  // max unchanged
  EXPECT_EQ(m, 2.0f);
  EXPECT_FLOAT_EQ(OnlineSoftmaxRescale(&m, 5.0f), std::exp(-3.0f));
  EXPECT_EQ(m, 5.0f);
  EXPECT_EQ(OnlineSoftmaxRescale(&m, -INFINITY), 1.0f);  // a wholly masked tile
  EXPECT_EQ(OnlineSoftmaxWeight(-INFINITY, 5.0f), 0.0f);
  EXPECT_FLOAT_EQ(OnlineSoftmaxWeight(4.0f, 5.0f), std::exp(-1.0f));
  EXPECT_FLOAT_EQ(OnlineSoftmaxLse(1.0f, std::exp(2.0f)), 3.0f);
}

// Forward and dQ pass: query tiles x key tiles [0, KeysEnd); dK/dV pass: key
// tiles x query tiles [FirstQueryTile, T). Each visible pair exactly once.
TEST(AttentionTilesTest, EveryVisiblePairIsVisitedOncePerPass) {
  for (int causal = 0; causal < 2; ++causal) {
    for (int64_t t = 1; t <= 70; ++t) {
      for (int64_t tile : kAttentionTileSizes) {
        std::vector<int> by_query(t * t, 0), by_key(t * t, 0);
        for (int64_t q0 = 0; q0 < t; q0 += tile) {
          const int64_t rows = TileRows(q0, tile, t), end = KeysEnd(q0, rows, t, causal);
          ASSERT_LE(end, t);
          for (int64_t k0 = 0; k0 < end; k0 += tile) {
            for (int64_t i = q0; i < q0 + rows; ++i) {
              for (int64_t j = k0; j < k0 + TileRows(k0, tile, end); ++j) {
                if (KeyVisible(i, j, causal)) ++by_query[i * t + j];
              }
            }
          }
        }
        for (int64_t k0 = 0; k0 < t; k0 += tile) {
          const int64_t cols = TileRows(k0, tile, t);
          for (int64_t q0 = FirstQueryTile(k0, tile, causal); q0 < t; q0 += tile) {
            for (int64_t i = q0; i < q0 + TileRows(q0, tile, t); ++i) {
              for (int64_t j = k0; j < k0 + cols; ++j) {
                if (KeyVisible(i, j, causal)) ++by_key[i * t + j];
              }
            }
          }
        }
        for (int64_t i = 0; i < t; ++i) {
          for (int64_t j = 0; j < t; ++j) {
            const int want = KeyVisible(i, j, causal) ? 1 : 0;
            ASSERT_EQ(by_query[i * t + j], want) << "t " << t << " tile " << tile << " causal "
                                                 << causal << " pair " << i << "," << j;
            ASSERT_EQ(by_key[i * t + j], want) << "t " << t << " tile " << tile << " causal "
                                               << causal << " pair " << i << "," << j;
          }
        }
      }
    }
  }
}

// One head: q, k, v, dy [t][d] (fp32); float64 reference and the tiled fp32
// replay of attention.cu's three kernels.
struct Head {
  int64_t t, d;
  bool causal;
  float scale;
  std::vector<float> q, k, v, dy;
};

struct Grads {
  std::vector<double> y, lse, dq, dk, dv;
};

Grads Reference(const Head& h) {
  Grads g{std::vector<double>(h.t * h.d), std::vector<double>(h.t),
          std::vector<double>(h.t * h.d, 0.0), std::vector<double>(h.t * h.d, 0.0),
          std::vector<double>(h.t * h.d, 0.0)};
  for (int64_t i = 0; i < h.t; ++i) {
    std::vector<double> s(h.t, -INFINITY);
    double m = -INFINITY;
    for (int64_t j = 0; j < h.t; ++j) {
      if (!KeyVisible(i, j, h.causal)) continue;
      double dot = 0;
      for (int64_t e = 0; e < h.d; ++e) dot += double(h.q[i * h.d + e]) * h.k[j * h.d + e];
      s[j] = h.scale * dot;
      m = std::max(m, s[j]);
    }
    double l = 0;
    for (int64_t j = 0; j < h.t; ++j) l += s[j] == -INFINITY ? 0.0 : std::exp(s[j] - m);
    g.lse[i] = m + std::log(l);
    std::vector<double> p(h.t);
    for (int64_t j = 0; j < h.t; ++j) p[j] = s[j] == -INFINITY ? 0.0 : std::exp(s[j] - g.lse[i]);
    for (int64_t e = 0; e < h.d; ++e) {
      double acc = 0;
      for (int64_t j = 0; j < h.t; ++j) acc += p[j] * h.v[j * h.d + e];
      g.y[i * h.d + e] = acc;
    }
    double delta = 0;
    for (int64_t e = 0; e < h.d; ++e) delta += double(h.dy[i * h.d + e]) * g.y[i * h.d + e];
    for (int64_t j = 0; j < h.t; ++j) {
      if (p[j] == 0.0) continue;
      double dp = 0;
      for (int64_t e = 0; e < h.d; ++e) dp += double(h.dy[i * h.d + e]) * h.v[j * h.d + e];
      const double ds = p[j] * (dp - delta);
      for (int64_t e = 0; e < h.d; ++e) {
        g.dq[i * h.d + e] += h.scale * ds * h.k[j * h.d + e];
        g.dk[j * h.d + e] += h.scale * ds * h.q[i * h.d + e];
        g.dv[j * h.d + e] += p[j] * h.dy[i * h.d + e];
      }
    }
  }
  return g;
}

float Dot(const float* a, const float* b, int64_t d) {
  float acc = 0.0f;
  for (int64_t e = 0; e < d; ++e) acc += a[e] * b[e];
  return acc;
}

// The score of (i, j) as the kernels compute it: -inf when masked.
float Score(const Head& h, int64_t i, int64_t j) {
  if (!KeyVisible(i, j, h.causal)) return -INFINITY;
  return h.scale * Dot(&h.q[i * h.d], &h.k[j * h.d], h.d);
}

Grads Tiled(const Head& h, int64_t tile) {
  const int64_t t = h.t, d = h.d;
  std::vector<float> y(t * d), lse(t), dq(t * d), dk(t * d), dv(t * d);
  // Forward: query tiles, key tiles streamed with the online softmax.
  for (int64_t q0 = 0; q0 < t; q0 += tile) {
    const int64_t rows = TileRows(q0, tile, t), end = KeysEnd(q0, rows, t, h.causal);
    std::vector<float> o(rows * d, 0.0f), m(rows, -INFINITY), l(rows, 0.0f);
    for (int64_t k0 = 0; k0 < end; k0 += tile) {
      const int64_t cols = TileRows(k0, tile, end);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> s(cols);
        float tile_max = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) {
          s[c] = Score(h, q0 + r, k0 + c);
          tile_max = std::max(tile_max, s[c]);
        }
        const float alpha = OnlineSoftmaxRescale(&m[r], tile_max);
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
          s[c] = OnlineSoftmaxWeight(s[c], m[r]);
          sum += s[c];
        }
        l[r] = l[r] * alpha + sum;
        for (int64_t e = 0; e < d; ++e) {
          float acc = o[r * d + e] * alpha;
          for (int64_t c = 0; c < cols; ++c) acc += s[c] * h.v[(k0 + c) * d + e];
          o[r * d + e] = acc;
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t e = 0; e < d; ++e) y[(q0 + r) * d + e] = o[r * d + e] / l[r];
      lse[q0 + r] = OnlineSoftmaxLse(m[r], l[r]);
    }
  }
  std::vector<float> delta(t);
  for (int64_t i = 0; i < t; ++i) delta[i] = Dot(&h.dy[i * d], &y[i * d], d);
  auto ds_of = [&](int64_t i, int64_t j, float* p) {
    const float s = Score(h, i, j);
    *p = s == -INFINITY ? 0.0f : std::exp(s - lse[i]);
    return *p * (Dot(&h.dy[i * d], &h.v[j * d], d) - delta[i]);
  };
  // dK/dV: key tiles, gathering over query tiles in order.
  for (int64_t k0 = 0; k0 < t; k0 += tile) {
    const int64_t cols = TileRows(k0, tile, t);
    std::vector<float> ak(cols * d, 0.0f), av(cols * d, 0.0f);
    for (int64_t q0 = FirstQueryTile(k0, tile, h.causal); q0 < t; q0 += tile) {
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = 0; r < TileRows(q0, tile, t); ++r) {
          float p;
          const float ds = ds_of(q0 + r, k0 + c, &p);
          for (int64_t e = 0; e < d; ++e) {
            ak[c * d + e] += ds * h.q[(q0 + r) * d + e];
            av[c * d + e] += p * h.dy[(q0 + r) * d + e];
          }
        }
      }
    }
    for (int64_t i = 0; i < cols * d; ++i) {
      dk[k0 * d + i] = h.scale * ak[i];
      dv[k0 * d + i] = av[i];
    }
  }
  // dQ: query tiles, gathering over key tiles in order.
  for (int64_t q0 = 0; q0 < t; q0 += tile) {
    const int64_t rows = TileRows(q0, tile, t), end = KeysEnd(q0, rows, t, h.causal);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> acc(d, 0.0f);
      for (int64_t k0 = 0; k0 < end; k0 += tile) {
        for (int64_t c = 0; c < TileRows(k0, tile, end); ++c) {
          float p;
          const float ds = ds_of(q0 + r, k0 + c, &p);
          for (int64_t e = 0; e < d; ++e) acc[e] += ds * h.k[(k0 + c) * d + e];
        }
      }
      for (int64_t e = 0; e < d; ++e) dq[(q0 + r) * d + e] = h.scale * acc[e];
    }
  }
  auto wide = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  return Grads{wide(y), wide(lse), wide(dq), wide(dk), wide(dv)};
}

// |got - want| <= tol * max|want| + atol (NaN fails). The atol covers
// results that cancel (a lone score near 0 is the sum of O(1) fp32
// products, so its absolute error is fp32's on O(1) terms).
::testing::AssertionResult Close(const std::vector<double>& got, const std::vector<double>& want,
                                 double tol, double atol = 1e-5) {
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * scale + atol)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs "
                                           << want[i] << " (scale " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(AttentionTilesTest, TiledReplayMatchesFloat64Reference) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int causal = 0; causal < 2; ++causal) {
    for (int64_t t : {1, 5, 33, 70}) {
      for (int64_t tile : {32, 16, 1}) {
        Head h{t, 24, causal != 0, 1.0f / std::sqrt(24.0f), {}, {}, {}, {}};
        for (auto* v : {&h.q, &h.k, &h.v, &h.dy}) {
          v->resize(t * h.d);
          for (float& x : *v) x = dist(rng);
        }
        const Grads want = Reference(h), got = Tiled(h, tile);
        SCOPED_TRACE(::testing::Message() << "t " << t << " tile " << tile << " causal " << causal);
        EXPECT_TRUE(Close(got.y, want.y, 1e-5));
        EXPECT_TRUE(Close(got.lse, want.lse, 1e-5));
        EXPECT_TRUE(Close(got.dq, want.dq, 1e-4));
        EXPECT_TRUE(Close(got.dk, want.dk, 1e-4));
        EXPECT_TRUE(Close(got.dv, want.dv, 1e-4));
      }
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

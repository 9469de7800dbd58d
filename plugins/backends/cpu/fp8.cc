// The FP8 ops (ABI 1.9): SCALED_CAST and SCALED_GEMM as exact emulation, the
// numerical reference for GPU backends' FP8 kernels; and (1.10)
// FP8_SCALE_UPDATE, common/fp8_scale_math.h per tensor (every bit fixed).
// FP8 values are decoded exactly (common/fp8_convert.h, through a 256-entry
// table per format) and encoded with the same header's saturating
// round-to-nearest-even casts.
//
// SCALED_GEMM is a plain blocked loop, not oneDNN: the oneDNN this backend
// loads (libdnnl.so.2, oneDNN 2.x) has no f8 data types at all (they came
// with oneDNN 3.x, and run there on reference kernels on CPUs without
// AMX-FP8), and its own threading may split K by the team size, which would
// make the bits depend on the team (gemm_tiles.h). Here every element of D
// is one thread's: the products of two FP8 values are exact in fp32 (at most
// 4 x 4 significant bits; exponents from 2^-25 to 2^25 stay normal), and
// they are summed in fp32 one after the other in increasing k, starting from
// +0. Blocking (rows in groups, columns in tiles, the group's lanes summed
// side by side so the loop vectorises over columns) never reorders a sum, so
// D is the same bits with any team, pool or block size. Then
// v = (alpha * scale_inv_a * scale_inv_b) * sum, + beta * D (D not read when
// beta is 0), + bias[j], each step rounded in fp32 as MNT_OP_GEMM's
// reference does; amax is max |v| before v is rounded to D's dtype.
// fast_accumulation is ignored (documented in the ABI): always full fp32.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "plugins/backends/common/fp8_convert.h"
#include "plugins/backends/common/fp8_scale_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"
#include "plugins/backends/cpu/tensor_io.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

// Every code of `dtype` (F8_E4M3 or F8_E5M2) as its exact fp32 value.
const float* Fp8Table(MNT_DType dtype) {
  static const std::array<float, 256> e4m3 = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[b] = Fp8E4M3BitsToFloat(static_cast<uint8_t>(b));
    return t;
  }();
  static const std::array<float, 256> e5m2 = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[b] = Fp8E5M2BitsToFloat(static_cast<uint8_t>(b));
    return t;
  }();
  return dtype == MNT_DTYPE_F8_E4M3 ? e4m3.data() : e5m2.data();
}

// The largest |x| of a stretch and whether it held a NaN; combined in any
// order it gives the same answer (max is exact), so partial results may come
// from any thread.
struct Amax {
  float max = 0.0f;
  bool nan = false;
  void Add(const float* x, int64_t n) {
    float m = max;
    bool has_nan = nan;
    for (int64_t i = 0; i < n; ++i) {
      const float a = std::fabs(x[i]);
      m = a > m ? a : m;
      has_nan |= a != a;
    }
    max = m;
    nan = has_nan;
  }
  void Add(const Amax& o) {
    max = std::max(max, o.max);
    nan |= o.nan;
  }
  float value() const { return nan ? std::numeric_limits<float>::quiet_NaN() : max; }
};

Amax Combine(const std::vector<Amax>& parts) {
  Amax all;
  for (const Amax& p : parts) all.Add(p);
  return all;
}

}  // namespace

Status CpuBackend::ScaledCast(const backend::ScaledCastCall& c) {
  const float scale = c.scale.f32()[0];  // read before amax may overwrite it
  const MNT_Tensor& x = *c.x;
  const MNT_Tensor& y = *c.y;
  const int64_t blocks = (c.n + kBlock - 1) / kBlock;
  std::vector<Amax> amax(static_cast<size_t>(c.amax.present() ? blocks : 0));
  if (c.quantize) {
    const bool e4m3 = y.dtype == MNT_DTYPE_F8_E4M3;
    uint8_t* dst = static_cast<uint8_t*>(y.data);
    ForBlocks(c.n, [&](int64_t off, int64_t len) {
      float buf[kBlock];
      const float* v = InBlock(x, off, len, buf);
      if (!amax.empty()) amax[off / kBlock].Add(v, len);
      if (e4m3) {
        for (int64_t i = 0; i < len; ++i) dst[off + i] = FloatToFp8E4M3Bits(v[i] * scale);
      } else {
        for (int64_t i = 0; i < len; ++i) dst[off + i] = FloatToFp8E5M2Bits(v[i] * scale);
      }
    });
  } else {
    const float* table = Fp8Table(x.dtype);
    const uint8_t* src = static_cast<const uint8_t*>(x.data);
    ForBlocks(c.n, [&](int64_t off, int64_t len) {
      float decoded[kBlock], ybuf[kBlock];
      for (int64_t i = 0; i < len; ++i) decoded[i] = table[src[off + i]];
      if (!amax.empty()) amax[off / kBlock].Add(decoded, len);
      float* out = OutBlock(y, off, ybuf);
      for (int64_t i = 0; i < len; ++i) out[i] = decoded[i] * scale;
      StoreBlock(out, y, off, len);
    });
  }
  if (c.amax.present()) c.amax.f32()[0] = Combine(amax).value();
  return Status::Ok();
}

namespace {

// Rows of D one thread computes together (each B element loaded once per
// group) and columns per tile (the group's sums stay in L1).
constexpr int64_t kRowGroup = 4;
constexpr int64_t kColTile = 256;
// Multiply-adds worth a thread (a fork/join is a few microseconds).
constexpr int64_t kMacsPerThread = int64_t{1} << 16;

// op(X) of a stored [rows, cols] FP8 matrix as row-major fp32 [r, c]
// (transposed: X is stored [c, r]).
std::vector<float> DecodeOp(const MNT_Tensor& x, bool trans, int64_t r, int64_t c) {
  std::vector<float> out(static_cast<size_t>(r * c));
  const float* table = Fp8Table(x.dtype);
  const uint8_t* src = static_cast<const uint8_t*>(x.data);
  const int threads = ThreadsFor(r * c);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < r; ++i) {
    float* row = out.data() + i * c;
    if (trans) {
      for (int64_t j = 0; j < c; ++j) row[j] = table[src[j * r + i]];
    } else {
      for (int64_t j = 0; j < c; ++j) row[j] = table[src[i * c + j]];
    }
  }
  return out;
}

}  // namespace

Status CpuBackend::ScaledGemm(const backend::ScaledGemmCall& g) {
  const MNT_ScaledGemmParams* p = g.params;
  const int64_t m = g.m, n = g.n, k = g.k;
  // The scalars are read before anything is written.
  const float scale = p->alpha * g.scale_inv_a.f32()[0] * g.scale_inv_b.f32()[0];
  const float beta = p->beta;
  if (m == 0 || n == 0) {
    if (g.amax.present()) g.amax.f32()[0] = 0.0f;  // max over nothing
    return Status::Ok();
  }
  // Whole operands decoded before D is written (D may not be read where
  // beta is 0, and is read row by row, each row by the thread writing it).
  const std::vector<float> a = DecodeOp(*g.a, g.trans_a, m, k);  // [m, k]
  const std::vector<float> b = DecodeOp(*g.b, g.trans_b, k, n);  // [k, n]
  const std::vector<float> bias = g.bias.present() ? ReadF32(*g.bias) : std::vector<float>();
  const MNT_Tensor& d = *g.d;
  const int64_t groups = (m + kRowGroup - 1) / kRowGroup;
  std::vector<Amax> amax(static_cast<size_t>(groups));
  const int threads = ThreadsFor(m * n * std::max<int64_t>(k, 1), kMacsPerThread);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> out_buf[kRowGroup], d_buf[kRowGroup];
#pragma omp for schedule(static)
    for (int64_t grp = 0; grp < groups; ++grp) {
      const int64_t i0 = grp * kRowGroup;
      const int64_t rows = std::min(kRowGroup, m - i0);
      float* out[kRowGroup];
      const float* d0[kRowGroup] = {};
      for (int64_t r = 0; r < rows; ++r) {
        if (beta != 0.0f) d0[r] = InRow(d, i0 + r, n, &d_buf[r]);
        out[r] = OutRow(d, i0 + r, n, &out_buf[r]);
      }
      for (int64_t j0 = 0; j0 < n; j0 += kColTile) {
        const int64_t w = std::min(kColTile, n - j0);
        float acc[kRowGroup][kColTile];
        for (int64_t r = 0; r < rows; ++r) std::fill(acc[r], acc[r] + w, 0.0f);
        for (int64_t kk = 0; kk < k; ++kk) {
          const float* brow = b.data() + kk * n + j0;
          for (int64_t r = 0; r < rows; ++r) {
            const float av = a[(i0 + r) * k + kk];
            float* sum = acc[r];
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) sum[j] += av * brow[j];
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* o = out[r] + j0;
          for (int64_t j = 0; j < w; ++j) {
            float v = scale * acc[r][j];
            if (beta != 0.0f) v += beta * d0[r][j0 + j];
            if (!bias.empty()) v += bias[j0 + j];
            o[j] = v;
          }
        }
      }
      Amax part;
      for (int64_t r = 0; r < rows; ++r) {
        part.Add(out[r], n);
        if (d.dtype != MNT_DTYPE_F32) WriteF32Range(out[r], d, (i0 + r) * n, n);
      }
      amax[grp] = part;
    }
  }
  if (g.amax.present()) g.amax.f32()[0] = Combine(amax).value();
  return Status::Ok();
}

// Each tensor n is one thread's, start to end (its history column, scale
// and scale_inv), so the team size changes nothing.
Status CpuBackend::Fp8ScaleUpdate(const backend::Fp8ScaleUpdateCall& u) {
  const int64_t n = u.n, rows = u.rows;
  const float* amax = u.amax.f32();
  float* history = u.history.f32();
  float* scale = u.scale.f32();
  float* scale_inv = u.scale_inv.f32();
  const int threads = ThreadsFor(n * rows);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < n; ++i) {
    Fp8ScaleUpdateOne(amax[i], history + i, rows, n, u.history_length, u.most_recent,
                      u.fp8_max, u.margin, scale + i, scale_inv + i);
  }
  return Status::Ok();
}

}  // namespace mnt::cpu

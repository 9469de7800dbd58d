// FP8_SCALE_UPDATE (ABI 1.10, FP8 delayed scaling) on the CPU backend,
// against a float64 reference written from the ABI text here (not
// common/fp8_scale_math.h, which the backend runs):
//  - fresh random [H, N] histories, amax vectors with zeros, infinities and
//    NaNs, every amax_algo, history_length 1..H, margins from 0 to past
//    fp32's range, both formats' fp8_max: history, scale and scale_inv
//    bit-exact (the ABI fixes every bit: values only move in the history;
//    the scale is the fp32 quotient fp8_max / r, rounded to nearest even,
//    times 2^-margin rounded once; scale_inv is 1 / scale rounded once),
//    and each updated scale within two fp32 roundings (2^-23 relative) of
//    the real fp8_max / r / 2^margin;
//  - twenty steps in a row, as a training run calls it;
//  - the same bits on 1 and 4 threads;
//  - Backend_GetOpSupport reports it, N = 0 does nothing, and the
//    contract's refusals (calls/fp8.cc) are one line each.
// NaN never passes: a compared value must be bit-identical and no output
// may be NaN (the inputs never make one).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cpu {
namespace {

using testing::BackendFixture;
using testing::HostOperand;
using testing::RunOnFreshBackend;

constexpr double kInf = std::numeric_limits<double>::infinity();

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The host state of N tensors.
struct State {
  int64_t rows = 0, n = 0;
  std::vector<float> history;  // [rows, n]
  std::vector<float> scale;    // [n]
  std::vector<float> scale_inv;
};

// The ABI's rule for every tensor, in double: returns the new state.
State Reference(const State& s, const std::vector<float>& amax,
                const MNT_Fp8ScaleUpdateParams& p) {
  State r = s;
  r.scale_inv.assign(s.n, 0.0f);
  for (int64_t i = 0; i < s.n; ++i) {
    std::vector<double> column(s.rows);
    for (int64_t h = 0; h < s.rows; ++h) column[h] = s.history[h * s.n + i];
    if (std::isfinite(amax[i])) {
      column.insert(column.begin(), amax[i]);
      column.pop_back();
    }
    for (int64_t h = 0; h < s.rows; ++h) r.history[h * s.n + i] = static_cast<float>(column[h]);
    const int64_t reduced = p.amax_algo == MNT_AMAX_ALGO_MOST_RECENT ? 1 : p.history_length;
    double a = -kInf;
    for (int64_t h = 0; h < reduced; ++h) a = std::max(a, column[h]);  // no NaN here
    if (a > 0.0) {
      const float q = static_cast<float>(static_cast<double>(p.fp8_max) / a);
      const float scale = static_cast<float>(std::ldexp(static_cast<double>(q), -p.margin));
      if (std::isfinite(scale) && scale > 0.0f) r.scale[i] = scale;
    }
    r.scale_inv[i] = static_cast<float>(1.0 / static_cast<double>(r.scale[i]));
  }
  return r;
}

// Bit-identical outputs, and the updated scales near the real value.
::testing::AssertionResult Matches(const State& got, const State& want, const State& before,
                                   const MNT_Fp8ScaleUpdateParams& p) {
  auto same = [](const std::vector<float>& g, const std::vector<float>& w,
                 const char* what) -> ::testing::AssertionResult {
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(g[i]) || Bits(g[i]) != Bits(w[i])) {
        return ::testing::AssertionFailure()
               << what << "[" << i << "] = " << g[i] << " (0x" << std::hex << Bits(g[i])
               << "), want " << w[i] << " (0x" << Bits(w[i]) << ")";
      }
    }
    return ::testing::AssertionSuccess();
  };
  ::testing::AssertionResult r = same(got.history, want.history, "history");
  if (r) r = same(got.scale, want.scale, "scale");
  if (r) r = same(got.scale_inv, want.scale_inv, "scale_inv");
  if (!r) return r;
  for (int64_t i = 0; i < want.n; ++i) {
    if (Bits(got.scale[i]) == Bits(before.scale[i])) continue;
    const int64_t reduced = p.amax_algo == MNT_AMAX_ALGO_MOST_RECENT ? 1 : p.history_length;
    long double a = 0;
    for (int64_t h = 0; h < reduced; ++h) {
      a = std::max<long double>(a, got.history[h * want.n + i]);
    }
    const long double real = std::ldexp(static_cast<long double>(p.fp8_max) / a, -p.margin);
    const long double tol = real >= std::numeric_limits<float>::min()
                                ? std::ldexp(1.0L, -23) * real
                                : std::ldexp(1.0L, -149);
    if (!(std::fabs(got.scale[i] - real) <= tol)) {
      return ::testing::AssertionFailure()
             << "scale[" << i << "] = " << got.scale[i] << ", real value "
             << static_cast<double>(real) << " (tolerance " << static_cast<double>(tol) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class Fp8ScaleUpdateTest : public BackendFixture {
 protected:
  float LogUniform(double lo, double hi) {
    return static_cast<float>(std::exp2(Random(1, lo, hi)[0]));
  }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng()); }

  // A fresh random state: some all-zero columns (their scale stays), the
  // rest log-uniform magnitudes with some zero rows.
  State RandomState(int64_t rows, int64_t n) {
    State s{rows, n, std::vector<float>(rows * n), std::vector<float>(n), {}};
    for (int64_t i = 0; i < n; ++i) {
      const bool zero_column = Int(0, 9) == 0;
      for (int64_t h = 0; h < rows; ++h) {
        s.history[h * n + i] = zero_column || Int(0, 7) == 0 ? 0.0f : LogUniform(-20, 20);
      }
      s.scale[i] = LogUniform(-8, 8);
    }
    return s;
  }
  // amax with zeros, +-inf, NaN and subnormals (448 / a overflows) mixed in.
  std::vector<float> RandomAmax(int64_t n) {
    std::vector<float> a(n);
    for (float& v : a) {
      switch (Int(0, 11)) {
        case 0: v = 0.0f; break;
        case 1: v = std::numeric_limits<float>::infinity(); break;
        case 2: v = -std::numeric_limits<float>::infinity(); break;
        case 3: v = std::nanf(""); break;
        case 4: v = LogUniform(-149, -126); break;
        default: v = LogUniform(-20, 20); break;
      }
    }
    return a;
  }

  // Runs the op on the backend from `s`; returns the state it leaves.
  sdk::Status RunOp(const State& s, const std::vector<float>& amax,
                    const MNT_Fp8ScaleUpdateParams& p, State* out) {
    MNT_Tensor ta = UploadF32(amax, {s.n});
    MNT_Tensor th = UploadF32(s.history, {s.rows, s.n});
    MNT_Tensor ts = UploadF32(s.scale, {s.n});
    MNT_Tensor ti = Empty(MNT_DTYPE_F32, {s.n});  // NaN: an unwritten element shows
    const sdk::Status st = Run(MNT_OP_FP8_SCALE_UPDATE, {ta}, {th, ts, ti}, &p);
    if (!st.ok()) return st;
    *out = s;
    out->history = DownloadF32(th);
    out->scale = DownloadF32(ts);
    out->scale_inv = DownloadF32(ti);
    return st;
  }

  // Exact fp32 values in and out (Upload goes through double, exact for
  // every float, NaN and infinities included).
  MNT_Tensor UploadF32(const std::vector<float>& v, std::initializer_list<int64_t> dims) {
    return Upload(std::vector<double>(v.begin(), v.end()), MNT_DTYPE_F32, dims);
  }
  std::vector<float> DownloadF32(const MNT_Tensor& t) {
    const std::vector<uint8_t> bytes = Bytes(t);
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }

  MNT_Fp8ScaleUpdateParams RandomParams(int64_t rows) {
    MNT_Fp8ScaleUpdateParams p{};
    p.struct_size = MNT_Fp8ScaleUpdateParams_STRUCT_SIZE;
    p.fp8_max = Int(0, 1) ? 448.0f : 57344.0f;
    const int m = Int(0, 9);
    p.margin = m < 7 ? Int(0, 4) : m < 9 ? Int(120, 160) : Int(200, 1000);
    p.amax_algo = Int(0, 2) == 0 ? MNT_AMAX_ALGO_MOST_RECENT : MNT_AMAX_ALGO_MAX;
    p.history_length = Int(1, static_cast<int>(rows));
    return p;
  }
};

TEST_F(Fp8ScaleUpdateTest, OpSupportReportsIt) {
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = backend();
  a.op = MNT_OP_FP8_SCALE_UPDATE;
  ASSERT_TRUE(sdk::StatusFromPluginError(CpuBackendPluginApi(), api()->Backend_GetOpSupport(&a))
                  .ok());
  EXPECT_EQ(a.supported, 1);
}

TEST_F(Fp8ScaleUpdateTest, RandomStatesMatchTheReferenceBitForBit) {
  int updated = 0, kept = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t rows = Int(1, 16), n = Int(1, 300);
    const MNT_Fp8ScaleUpdateParams p = RandomParams(rows);
    SCOPED_TRACE(::testing::Message()
                 << "trial " << trial << ": H " << rows << " N " << n << " history_length "
                 << p.history_length << " algo " << p.amax_algo << " fp8_max " << p.fp8_max
                 << " margin " << p.margin);
    const State before = RandomState(rows, n);
    const std::vector<float> amax = RandomAmax(n);
    State got;
    const sdk::Status s = RunOp(before, amax, p, &got);
    ASSERT_TRUE(s.ok()) << s.message();
    const State want = Reference(before, amax, p);
    ASSERT_TRUE(Matches(got, want, before, p));
    for (int64_t i = 0; i < n; ++i) (Bits(got.scale[i]) == Bits(before.scale[i]) ? kept : updated)++;
  }
  EXPECT_GT(updated, 1000);  // both branches were exercised
  EXPECT_GT(kept, 100);
}

// A run's view: one update per step, the state carried over.
TEST_F(Fp8ScaleUpdateTest, TwentyStepsInARow) {
  const int64_t rows = 8, n = 37;
  MNT_Fp8ScaleUpdateParams p{MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 448.0f, 1,
                             MNT_AMAX_ALGO_MAX, 5};
  State want{rows, n, std::vector<float>(rows * n, 0.0f), std::vector<float>(n, 1.0f), {}};
  MNT_Tensor th = UploadF32(want.history, {rows, n});
  MNT_Tensor ts = UploadF32(want.scale, {n});
  MNT_Tensor ti = Empty(MNT_DTYPE_F32, {n});
  for (int step = 0; step < 20; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    std::vector<float> amax = RandomAmax(n);
    MNT_Tensor ta = UploadF32(amax, {n});
    ASSERT_TRUE(Run(MNT_OP_FP8_SCALE_UPDATE, {ta}, {th, ts, ti}, &p).ok());
    const State before = want;
    want = Reference(want, amax, p);
    State got = want;
    got.history = DownloadF32(th);
    got.scale = DownloadF32(ts);
    got.scale_inv = DownloadF32(ti);
    ASSERT_TRUE(Matches(got, want, before, p));
  }
}

TEST_F(Fp8ScaleUpdateTest, NoTensorsIsANoOp) {
  MNT_Tensor some = UploadF32({1.0f}, {1});
  MNT_Tensor ta = Empty(MNT_DTYPE_F32, {0}), th = Empty(MNT_DTYPE_F32, {4, 0});
  MNT_Tensor ts = Empty(MNT_DTYPE_F32, {0}), ti = Empty(MNT_DTYPE_F32, {0});
  for (MNT_Tensor* t : {&ta, &th, &ts, &ti}) {
    if (t->data == nullptr) t->data = some.data;  // non-NULL, no byte used
  }
  MNT_Fp8ScaleUpdateParams p{MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 448.0f, 0,
                             MNT_AMAX_ALGO_MAX, 4};
  const sdk::Status s = Run(MNT_OP_FP8_SCALE_UPDATE, {ta}, {th, ts, ti}, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Download(some)[0], 1.0);
}

// ---- the same bits on any team ----------------------------------------------------

// Outputs (history, scale, scale_inv) of one run on a fresh CPU backend
// created with `options`.
std::vector<std::vector<uint8_t>> RunOn(const char* options, const State& s,
                                        const std::vector<float>& amax,
                                        const MNT_Fp8ScaleUpdateParams& p) {
  auto f32 = [](const std::vector<float>& v, std::vector<int64_t> dims) {
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return HostOperand{MNT_DTYPE_F32, std::move(dims), std::move(bytes)};
  };
  return RunOnFreshBackend(options, MNT_OP_FP8_SCALE_UPDATE, {f32(amax, {s.n})},
                           {f32(s.history, {s.rows, s.n}), f32(s.scale, {s.n}),
                            f32(std::vector<float>(s.n, 0.0f), {s.n})},
                           &p);
}

TEST_F(Fp8ScaleUpdateTest, SameBitsOnOneAndFourThreads) {
  // 16 x 8191 elements: several threads' worth (parallel.h).
  const int64_t rows = 16, n = 8191;
  const State s = RandomState(rows, n);
  const std::vector<float> amax = RandomAmax(n);
  const MNT_Fp8ScaleUpdateParams p{MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 57344.0f, 2,
                                   MNT_AMAX_ALGO_MAX, 12};
  const auto one = RunOn("threads=1", s, amax, p);
  const auto four = RunOn("threads=4", s, amax, p);
  ASSERT_EQ(one.size(), 3u);
  EXPECT_TRUE(one == four) << "FP8_SCALE_UPDATE differs between 1 and 4 threads";
  // And both are the reference's.
  const State want = Reference(s, amax, p);
  State got = s;
  got.history.assign(rows * n, 0.0f);
  got.scale.assign(n, 0.0f);
  got.scale_inv.assign(n, 0.0f);
  std::memcpy(got.history.data(), four[0].data(), four[0].size());
  std::memcpy(got.scale.data(), four[1].data(), four[1].size());
  std::memcpy(got.scale_inv.data(), four[2].data(), four[2].size());
  EXPECT_TRUE(Matches(got, want, s, p));
}

// ---- the contract's refusals (calls/fp8.cc) -----------------------------------------

TEST_F(Fp8ScaleUpdateTest, Refusals) {
  MNT_Tensor amax = UploadF32({1.0f, 2.0f, 3.0f}, {3});
  MNT_Tensor history = Upload(Random(4 * 3, 0, 1), MNT_DTYPE_F32, {4, 3});
  MNT_Tensor scale = UploadF32({1.0f, 1.0f, 1.0f}, {3});
  MNT_Tensor scale_inv = Empty(MNT_DTYPE_F32, {3});
  MNT_Fp8ScaleUpdateParams p{MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 448.0f, 0,
                             MNT_AMAX_ALGO_MAX, 4};
  auto run = [&](const std::vector<MNT_Tensor>& in, const std::vector<MNT_Tensor>& out,
                 const void* params) {
    return Run(MNT_OP_FP8_SCALE_UPDATE, in, out, params).message();
  };
  const std::vector<MNT_Tensor> outs = {history, scale, scale_inv};
  ASSERT_EQ(run({amax}, outs, &p), "");

  // Counts and presence.
  EXPECT_EQ(run({}, outs, &p), "FP8_SCALE_UPDATE: got 0 inputs, expected 1");
  EXPECT_EQ(run({amax}, {history, scale}, &p), "FP8_SCALE_UPDATE: got 2 outputs, expected 3");
  MNT_Tensor absent = scale_inv;
  absent.data = nullptr;
  EXPECT_EQ(run({amax}, {history, scale, absent}, &p),
            "FP8_SCALE_UPDATE: out[2] scale_inv is missing (data is NULL)");

  // Params.
  EXPECT_EQ(run({amax}, outs, nullptr),
            "FP8_SCALE_UPDATE: params (MNT_Fp8ScaleUpdateParams) is NULL");
  MNT_Fp8ScaleUpdateParams bad = p;
  bad.struct_size = MNT_Fp8ScaleUpdateParams_STRUCT_SIZE - 4;
  EXPECT_EQ(run({amax}, outs, &bad),
            sdk::Format("FP8_SCALE_UPDATE: MNT_Fp8ScaleUpdateParams.struct_size %zu is smaller "
                        "than %zu",
                        bad.struct_size, static_cast<size_t>(MNT_Fp8ScaleUpdateParams_STRUCT_SIZE)));
  for (float fp8_max : {0.0f, -448.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    bad = p;
    bad.fp8_max = fp8_max;
    EXPECT_EQ(run({amax}, outs, &bad),
              sdk::Format("FP8_SCALE_UPDATE: fp8_max %g must be finite and > 0 (448 for "
                          "f8_e4m3, 57344 for f8_e5m2)",
                          static_cast<double>(fp8_max)));
  }
  bad = p;
  bad.margin = -1;
  EXPECT_EQ(run({amax}, outs, &bad), "FP8_SCALE_UPDATE: margin -1 must be >= 0");
  for (int32_t algo : {0, 3, -1}) {
    bad = p;
    std::memcpy(&bad.amax_algo, &algo, sizeof(algo));
    EXPECT_EQ(run({amax}, outs, &bad),
              sdk::Format("FP8_SCALE_UPDATE: amax_algo %d must be MNT_AMAX_ALGO_MAX (1) or "
                          "MNT_AMAX_ALGO_MOST_RECENT (2)",
                          algo));
  }
  for (int32_t length : {0, 5, -2}) {
    bad = p;
    bad.history_length = length;
    EXPECT_EQ(run({amax}, outs, &bad),
              sdk::Format("FP8_SCALE_UPDATE: history_length %d must be in [1, H=4] (out[0] "
                          "history is f32[4,3])",
                          length));
  }
  // MOST_RECENT still needs a valid history_length (1..H).
  bad = p;
  bad.amax_algo = MNT_AMAX_ALGO_MOST_RECENT;
  bad.history_length = 1;
  EXPECT_EQ(run({amax}, outs, &bad), "");

  // Dtypes and shapes.
  EXPECT_EQ(run({Upload({1, 2, 3}, MNT_DTYPE_BF16, {3})}, outs, &p),
            "FP8_SCALE_UPDATE: in[0] amax is bf16[3], expected f32[N] (rank 1)");
  EXPECT_EQ(run({Upload({1, 2, 3}, MNT_DTYPE_F32, {1, 3})}, outs, &p),
            "FP8_SCALE_UPDATE: in[0] amax is f32[1,3], expected f32[N] (rank 1)");
  EXPECT_EQ(run({amax}, {Upload(Random(12), MNT_DTYPE_F16, {4, 3}), scale, scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[0] history is f16[4,3], expected f32[H, N=3] with H >= 1");
  EXPECT_EQ(run({amax}, {Upload(Random(12), MNT_DTYPE_F32, {3, 4}), scale, scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[0] history is f32[3,4], expected f32[H, N=3] with H >= 1");
  EXPECT_EQ(run({amax}, {Upload(Random(12), MNT_DTYPE_F32, {12}), scale, scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[0] history is f32[12], expected f32[H, N=3] with H >= 1");
  MNT_Tensor no_rows = Empty(MNT_DTYPE_F32, {0, 3});
  no_rows.data = history.data;
  EXPECT_EQ(run({amax}, {no_rows, scale, scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[0] history is f32[0,3], expected f32[H, N=3] with H >= 1");
  EXPECT_EQ(run({amax}, {history, Upload({1, 1}, MNT_DTYPE_F32, {2}), scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[1] scale is f32[2], expected f32[N=3]");
  EXPECT_EQ(run({amax}, {history, Upload({1, 1, 1}, MNT_DTYPE_F16, {3}), scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[1] scale is f16[3], expected f32[N=3]");
  EXPECT_EQ(run({amax}, {history, scale, Empty(MNT_DTYPE_F32, {3, 1})}, &p),
            "FP8_SCALE_UPDATE: out[2] scale_inv is f32[3,1], expected f32[N=3]");
  EXPECT_EQ(run({amax}, {history, scale, Empty(MNT_DTYPE_BF16, {3})}, &p),
            "FP8_SCALE_UPDATE: out[2] scale_inv is bf16[3], expected f32[N=3]");

  // Overlapping operands: the same buffer, or part of one.
  EXPECT_EQ(run({amax}, {history, scale, scale}, &p),
            "FP8_SCALE_UPDATE: out[2] scale_inv overlaps out[1] scale");
  MNT_Tensor row1 = scale;
  row1.data = static_cast<float*>(history.data) + 3;  // history's row 1
  EXPECT_EQ(run({amax}, {history, row1, scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[1] scale overlaps out[0] history");
  MNT_Tensor amax_in_history = amax;
  MNT_Tensor big_history = Upload(Random(5 * 3, 0, 1), MNT_DTYPE_F32, {5, 3});
  amax_in_history.data = static_cast<float*>(big_history.data) + 12;  // row 4
  EXPECT_EQ(run({amax_in_history}, {history, scale, scale_inv}, &p), "");  // separate buffers
  EXPECT_EQ(run({amax_in_history}, {big_history, scale, scale_inv}, &p),
            "FP8_SCALE_UPDATE: out[0] history overlaps in[0] amax");
}

}  // namespace
}  // namespace mnt::cpu

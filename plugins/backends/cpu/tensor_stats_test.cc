// TENSOR_STATS (ABI 1.10, what --debug_overflow prints of an operand) on
// the CPU backend, against a float64 reference written here from the ABI
// text (elements decoded from their bits with std::ldexp, not with
// common/tensor_stats_math.h or float_convert.h, which the backend runs):
//  - fresh random tensors in F32, F16 and BF16 of random rank (0 to 4) and
//    size (one element to several threads' worth), whose elements are
//    drawn from every class: normal numbers over the whole exponent range,
//    the largest finite ones, subnormals, +0 and -0, +-inf, NaNs with any
//    payload; and tensors with nothing finite, only zeros, only one class.
//    Outputs bit for bit (the ABI fixes every bit: a min, a max, counts);
//  - the same bits on 1 and 4 threads;
//  - an empty tensor gives {0, 0} and {0, 0};
//  - Backend_GetOpSupport reports it, and the contract's refusals
//    (common/calls/tensor_stats.cc) are one line each.
// The seed is the fixture's (printed).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/testing/float_patterns.h"
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
using namespace backend::testing;  // float_patterns.h

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

::testing::AssertionResult Matches(const std::vector<uint8_t>& range_bytes,
                                   const std::vector<uint8_t>& count_bytes, const ExpectedStats& w) {
  float range[2];
  int32_t counts[2];
  std::memcpy(range, range_bytes.data(), 8);
  std::memcpy(counts, count_bytes.data(), 8);
  for (int k = 0; k < 2; ++k) {
    if (Bits(range[k]) != Bits(w.range[k])) {
      return ::testing::AssertionFailure()
             << "range[" << k << "] = " << range[k] << " (0x" << std::hex << Bits(range[k])
             << "), want " << w.range[k] << " (0x" << Bits(w.range[k]) << ")";
    }
  }
  if (counts[0] != w.counts[0] || counts[1] != w.counts[1]) {
    return ::testing::AssertionFailure() << "counts {" << counts[0] << ", " << counts[1]
                                         << "}, want {" << w.counts[0] << ", " << w.counts[1]
                                         << "}";
  }
  return ::testing::AssertionSuccess();
}

class TensorStatsTest : public BackendFixture {
 protected:
  // Random patterns: each element of a class drawn from `classes`.
  std::vector<uint32_t> RandomPatterns(const FloatFormat& f, int64_t n,
                                       const std::vector<FloatClass>& classes) {
    std::vector<uint32_t> p(static_cast<size_t>(n));
    for (uint32_t& b : p) b = RandomPattern(f, classes[rng()() % classes.size()], rng());
    return p;
  }
  // x holding `patterns` viewed with a random shape of that many elements.
  MNT_Tensor UploadShaped(const FloatFormat& f, const std::vector<uint32_t>& patterns) {
    const int64_t n = static_cast<int64_t>(patterns.size());
    MNT_Tensor t = UploadBytes(StorePatterns(f, patterns), f.dtype, {n});
    // A random factorisation of n into rank 0..4 dims (rank 0 only for 1).
    const int rank = n == 1 ? static_cast<int>(rng()() % 5) : 1 + static_cast<int>(rng()() % 4);
    int64_t rest = n;
    for (int d = 0; d < rank; ++d) t.dims[d] = 1;
    for (int d = 0; d + 1 < rank; ++d) {
      std::vector<int64_t> divisors;
      for (int64_t k = 1; k * k <= rest; ++k) {
        if (rest % k == 0) divisors.push_back(rng()() % 2 ? k : rest / k);
      }
      t.dims[d] = divisors[rng()() % divisors.size()];
      rest /= t.dims[d];
    }
    if (rank > 0) t.dims[rank - 1] = rest;
    t.rank = rank;
    EXPECT_EQ(sdk::NumElements(t), n);
    return t;
  }
  ::testing::AssertionResult RunAndCompare(const FloatFormat& f, const std::vector<uint32_t>& patterns) {
    const MNT_Tensor x = UploadShaped(f, patterns);
    const MNT_Tensor range = Empty(MNT_DTYPE_F32, {2});
    const MNT_Tensor counts = Empty(MNT_DTYPE_I32, {2});
    const sdk::Status s = Run(MNT_OP_TENSOR_STATS, {x}, {range, counts});
    if (!s.ok()) return ::testing::AssertionFailure() << s.message();
    return Matches(Bytes(range), Bytes(counts), ReferenceStats(f, patterns))
           << " (" << sdk::Describe(x) << ")";
  }
};

TEST_F(TensorStatsTest, OpSupportReportsIt) {
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = backend();
  a.op = MNT_OP_TENSOR_STATS;
  ASSERT_TRUE(sdk::StatusFromPluginError(client().plugin(), api()->Backend_GetOpSupport(&a)).ok());
  EXPECT_EQ(a.supported, 1);
}

TEST_F(TensorStatsTest, RandomTensorsMatchTheReferenceBitForBit) {
  const std::vector<FloatClass> all = {kNormal, kLargest, kSubnormal, kZero, kInf, kNan};
  for (const FloatFormat& f : kFloatFormats) {
    for (int trial = 0; trial < 40; ++trial) {
      // Mostly small; every fourth one several threads' worth.
      const int64_t n = trial % 4 == 3 ? 70000 + rng()() % 200000 : 1 + rng()() % 3000;
      // Every class, or a random subset of them (a rare class, or none,
      // changes which element wins).
      std::vector<FloatClass> classes = all;
      if (trial % 2 == 1) {
        std::shuffle(classes.begin(), classes.end(), rng());
        classes.resize(1 + rng()() % kFloatClasses);
      }
      ASSERT_TRUE(RunAndCompare(f, RandomPatterns(f, n, classes)))
          << "dtype " << sdk::DTypeName(f.dtype) << ", trial " << trial;
    }
  }
}

TEST_F(TensorStatsTest, CornerCases) {
  for (const FloatFormat& f : kFloatFormats) {
    SCOPED_TRACE(sdk::DTypeName(f.dtype));
    // Nothing finite (a huge tensor: the counts cross blocks and threads).
    EXPECT_TRUE(RunAndCompare(f, RandomPatterns(f, 100003, {kInf, kNan})));
    EXPECT_TRUE(RunAndCompare(f, RandomPatterns(f, 17, {kNan})));
    // Only zeros of either sign: +0 and +0.
    EXPECT_TRUE(RunAndCompare(f, RandomPatterns(f, 5000, {kZero})));
    // Subnormals only: measured, never flushed.
    EXPECT_TRUE(RunAndCompare(f, RandomPatterns(f, 999, {kSubnormal})));
    // One element, of each class.
    for (int c = 0; c < kFloatClasses; ++c) {
      EXPECT_TRUE(RunAndCompare(f, RandomPatterns(f, 1, {static_cast<FloatClass>(c)}))) << c;
    }
  }
}

TEST_F(TensorStatsTest, EmptyTensorGivesZeros) {
  for (const FloatFormat& f : kFloatFormats) {
    MNT_Tensor x = Upload({1.0, 2.0}, f.dtype, {2});
    x.dims[0] = 0;  // a view of no elements into live memory
    const MNT_Tensor range = Empty(MNT_DTYPE_F32, {2});
    const MNT_Tensor counts = Empty(MNT_DTYPE_I32, {2});
    const sdk::Status s = Run(MNT_OP_TENSOR_STATS, {x}, {range, counts});
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(Matches(Bytes(range), Bytes(counts), ExpectedStats{}));
  }
}

// ---- the same bits on any team ----------------------------------------------------

// range and counts bytes of one run on a fresh CPU backend with `options`.
std::vector<uint8_t> RunOn(const char* options, const FloatFormat& f, const std::vector<uint8_t>& x) {
  const int64_t n = static_cast<int64_t>(x.size() / f.bytes);
  const auto out = RunOnFreshBackend(
      options, MNT_OP_TENSOR_STATS, {{f.dtype, {n}, x}},
      {{MNT_DTYPE_F32, {2}, std::vector<uint8_t>(8, 0xee)},
       {MNT_DTYPE_I32, {2}, std::vector<uint8_t>(8, 0xee)}},
      nullptr);
  if (out.size() != 2) return {};
  std::vector<uint8_t> result = out[0];
  result.insert(result.end(), out[1].begin(), out[1].end());
  return result;
}

TEST_F(TensorStatsTest, SameBitsOnOneAndFourThreads) {
  for (const FloatFormat& f : kFloatFormats) {
    // Several threads' worth (parallel.h); few NaNs and infs, so which
    // thread holds them matters.
    const int64_t n = 300001;
    std::vector<uint32_t> patterns = RandomPatterns(f, n, {kNormal, kSubnormal, kZero});
    for (int k = 0; k < 5; ++k) patterns[rng()() % n] = RandomPattern(f, k % 2 ? kInf : kNan, rng());
    const std::vector<uint8_t> x = StorePatterns(f, patterns);
    const std::vector<uint8_t> one = RunOn("threads=1", f, x);
    const std::vector<uint8_t> four = RunOn("threads=4", f, x);
    ASSERT_EQ(one.size(), 16u);
    EXPECT_TRUE(one == four) << "TENSOR_STATS differs between 1 and 4 threads ("
                             << sdk::DTypeName(f.dtype) << ")";
    EXPECT_TRUE(Matches({four.begin(), four.begin() + 8}, {four.begin() + 8, four.end()},
                        ReferenceStats(f, patterns)));
  }
}

// ---- the contract's refusals (common/calls/tensor_stats.cc) --------------------------

TEST_F(TensorStatsTest, Refusals) {
  const MNT_Tensor x = Upload(Random(12), MNT_DTYPE_BF16, {3, 4});
  const MNT_Tensor range = Empty(MNT_DTYPE_F32, {2});
  const MNT_Tensor counts = Empty(MNT_DTYPE_I32, {2});
  auto run = [&](const std::vector<MNT_Tensor>& in, const std::vector<MNT_Tensor>& out) {
    return Run(MNT_OP_TENSOR_STATS, in, out).message();
  };
  ASSERT_EQ(run({x}, {range, counts}), "");

  // Counts and presence.
  EXPECT_EQ(run({}, {range, counts}), "TENSOR_STATS: got 0 inputs, expected 1");
  EXPECT_EQ(run({x, x}, {range, counts}), "TENSOR_STATS: got 2 inputs, expected 1");
  EXPECT_EQ(run({x}, {range}), "TENSOR_STATS: got 1 outputs, expected 2");
  MNT_Tensor absent = counts;
  absent.data = nullptr;
  EXPECT_EQ(run({x}, {range, absent}), "TENSOR_STATS: out[1] counts is missing (data is NULL)");
  absent = x;
  absent.data = nullptr;
  EXPECT_EQ(run({absent}, {range, counts}), "TENSOR_STATS: in[0] x is missing (data is NULL)");

  // x: a float dtype.
  const MNT_Tensor ids = UploadI32({1, 2, 3}, {3});
  EXPECT_EQ(run({ids}, {range, counts}),
            "TENSOR_STATS: in[0] x is i32[3], expected a float dtype (f32, f16 or bf16)");
  const MNT_Tensor fp8 = UploadBytes({1, 2, 3, 4}, MNT_DTYPE_F8_E4M3, {4});
  EXPECT_EQ(run({fp8}, {range, counts}),
            "TENSOR_STATS: in[0] x is f8_e4m3[4], expected a float dtype (f32, f16 or bf16)");

  // range: f32[2]; counts: i32[2].
  const MNT_Tensor range3 = Empty(MNT_DTYPE_F32, {3});
  EXPECT_EQ(run({x}, {range3, counts}),
            "TENSOR_STATS: out[0] range is f32[3], expected f32[2] (smallest and largest "
            "finite |x|)");
  const MNT_Tensor range_2d = Empty(MNT_DTYPE_F32, {1, 2});
  EXPECT_EQ(run({x}, {range_2d, counts}),
            "TENSOR_STATS: out[0] range is f32[1,2], expected f32[2] (smallest and largest "
            "finite |x|)");
  const MNT_Tensor range_bf16 = Empty(MNT_DTYPE_BF16, {2});
  EXPECT_EQ(run({x}, {range_bf16, counts}),
            "TENSOR_STATS: out[0] range is bf16[2], expected f32[2] (smallest and largest "
            "finite |x|)");
  const MNT_Tensor counts_f32 = Empty(MNT_DTYPE_F32, {2});
  EXPECT_EQ(run({x}, {range, counts_f32}),
            "TENSOR_STATS: out[1] counts is f32[2], expected i32[2] (inf-or-NaN and NaN "
            "counts)");
  const MNT_Tensor counts1 = Empty(MNT_DTYPE_I32, {1});
  EXPECT_EQ(run({x}, {range, counts1}),
            "TENSOR_STATS: out[1] counts is i32[1], expected i32[2] (inf-or-NaN and NaN "
            "counts)");

  // No two operands share bytes.
  const MNT_Tensor both = Empty(MNT_DTYPE_F32, {4});
  MNT_Tensor r = both, c = both;
  r.dims[0] = 2;
  c.dtype = MNT_DTYPE_I32;
  c.dims[0] = 2;
  c.data = static_cast<char*>(both.data) + 4;  // overlaps range[1]
  EXPECT_EQ(run({x}, {r, c}), "TENSOR_STATS: out[1] counts overlaps out[0] range");
  c.data = static_cast<char*>(both.data) + 8;  // right after it: fine
  EXPECT_EQ(run({x}, {r, c}), "");
  MNT_Tensor xr = r;  // x is the range buffer itself
  EXPECT_EQ(run({xr}, {r, counts}), "TENSOR_STATS: out[0] range overlaps in[0] x");
}

}  // namespace
}  // namespace mnt::cpu

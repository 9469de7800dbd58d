// TENSOR_STATS (ABI 1.10, what --debug_overflow measures of an operand) on
// the cuda backend vs the CPU backend, bit for bit: fresh random tensors in
// F32, F16 and BF16 whose elements come from every class (normal numbers
// over the whole exponent range, the largest finite ones, subnormals, +0
// and -0, +-inf, NaNs with any payload), sizes from one element through one
// block, many blocks and past the kernel's grid cap (grid-stride), tensors
// with nothing finite or only zeros, an empty view; both outputs also
// against a float64 host reference. The counts' saturation at INT32_MAX on
// 2^31 + 5 NaNs (GPU only, where memory allows). The contract's refusals
// read as on the CPU. Skips without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/testing/float_patterns.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {
namespace {

using testing::DualBackendTest;
using testing::Pair;
using namespace backend::testing;  // float_patterns.h

// The outputs' 16 bytes (range F32 [2], counts I32 [2]) the ABI defines.
std::vector<uint8_t> Reference(const FloatFormat& f, const std::vector<uint32_t>& patterns) {
  const ExpectedStats want = ReferenceStats(f, patterns);
  std::vector<uint8_t> out(16);
  std::memcpy(out.data(), want.range, 8);
  std::memcpy(out.data() + 8, want.counts, 8);
  return out;
}

std::string Show(const std::vector<uint8_t>& b) {
  if (b.size() != 16) return "(" + std::to_string(b.size()) + " bytes)";
  float r[2];
  int32_t c[2];
  std::memcpy(r, b.data(), 8);
  std::memcpy(c, b.data() + 8, 8);
  char text[160];
  std::snprintf(text, sizeof(text), "{%.9g, %.9g} {%d, %d}", r[0], r[1], c[0], c[1]);
  return text;
}

class CudaTensorStatsTest : public DualBackendTest {
 protected:
  std::vector<uint32_t> RandomPatterns(const FloatFormat& f, int64_t n,
                                       const std::vector<FloatClass>& classes) {
    std::vector<uint32_t> p(static_cast<size_t>(n));
    for (uint32_t& b : p) b = RandomPattern(f, classes[rng_() % classes.size()], rng_);
    return p;
  }
  // Both backends on the same tensor: cuda == cpu == reference, bit for bit.
  void Check(const FloatFormat& f, const std::vector<uint32_t>& patterns) {
    const int64_t n = static_cast<int64_t>(patterns.size());
    const std::vector<uint8_t> bytes = StorePatterns(f, patterns);
    auto x = d_.UploadRaw(bytes, f.dtype, {n});
    auto range = d_.Poisoned(MNT_DTYPE_F32, {2});
    auto counts = d_.UploadI32({-7, -7}, {2});
    const sdk::Status s = d_.RunBoth(MNT_OP_TENSOR_STATS, {x.get()}, {range.get(), counts.get()});
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<uint8_t> cuda = d_.Bytes(*range, true), cpu = d_.Bytes(*range, false);
    const std::vector<uint8_t> cuda_counts = d_.Bytes(*counts, true);
    const std::vector<uint8_t> cpu_counts = d_.Bytes(*counts, false);
    cuda.insert(cuda.end(), cuda_counts.begin(), cuda_counts.end());
    cpu.insert(cpu.end(), cpu_counts.begin(), cpu_counts.end());
    const std::vector<uint8_t> want = Reference(f, patterns);
    EXPECT_EQ(cuda, cpu) << sdk::DTypeName(f.dtype) << "[" << n << "]: cuda " << Show(cuda)
                         << ", cpu " << Show(cpu);
    EXPECT_EQ(cuda, want) << sdk::DTypeName(f.dtype) << "[" << n << "]: cuda " << Show(cuda)
                          << ", reference " << Show(want);
  }
};

TEST_F(CudaTensorStatsTest, OpSupport) {
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = d_.cuda().backend();
  a.op = MNT_OP_TENSOR_STATS;
  ASSERT_TRUE(
      sdk::StatusFromPluginError(d_.cuda().plugin(), d_.cuda().api()->Backend_GetOpSupport(&a))
          .ok());
  EXPECT_EQ(a.supported, 1);
}

TEST_F(CudaTensorStatsTest, RandomTensorsMatchCpuBitForBit) {
  const std::vector<FloatClass> all = {kNormal, kLargest, kSubnormal, kZero, kInf, kNan};
  // One element, one warp, one block's share, many blocks, past the grid
  // cap (1024 blocks of 4096 elements): every element still read once.
  const int64_t sizes[] = {1, 31, 4096, 4097, 300001, 5000011};
  for (const FloatFormat& f : kFloatFormats) {
    for (int64_t n : sizes) {
      for (int variant = 0; variant < 3; ++variant) {
        std::vector<FloatClass> classes = all;
        if (variant == 1) classes = {kNormal, kSubnormal, kZero};  // finite only
        std::vector<uint32_t> p = RandomPatterns(f, n, classes);
        // A lone inf and NaN somewhere in the finite-only case; in the
        // third, one finite element among non-finite ones.
        if (variant == 1 && n > 2) {
          p[rng_() % n] = RandomPattern(f, kInf, rng_);
          p[rng_() % n] = RandomPattern(f, kNan, rng_);
        }
        if (variant == 2) {
          p = RandomPatterns(f, n, {kInf, kNan});
          p[rng_() % n] = RandomPattern(f, kSubnormal, rng_);
        }
        Check(f, p);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(CudaTensorStatsTest, CornerCases) {
  for (const FloatFormat& f : kFloatFormats) {
    SCOPED_TRACE(sdk::DTypeName(f.dtype));
    Check(f, RandomPatterns(f, 100003, {kInf, kNan}));  // nothing finite: {0, 0}
    Check(f, RandomPatterns(f, 9999, {kZero}));         // -0 and +0: {+0, +0}
    Check(f, RandomPatterns(f, 777, {kSubnormal}));     // never flushed
    Check(f, RandomPatterns(f, 65537, {kLargest}));
  }
  // An empty view (live memory, no elements): {0, 0} and {0, 0}.
  auto x = d_.Upload({1.0f, 2.0f}, MNT_DTYPE_BF16, {2});
  x->dims = {0};
  auto range = d_.Poisoned(MNT_DTYPE_F32, {2});
  auto counts = d_.UploadI32({-7, -7}, {2});
  const sdk::Status s = d_.RunBoth(MNT_OP_TENSOR_STATS, {x.get()}, {range.get(), counts.get()});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(d_.Bytes(*range, true), std::vector<uint8_t>(8, 0));
  EXPECT_EQ(d_.Bytes(*counts, true), std::vector<uint8_t>(8, 0));
}

TEST_F(CudaTensorStatsTest, CountsSaturateAtInt32Max) {
  // 2^31 + 5 bf16 NaNs (4 GiB): more than an I32 counts. GPU only (the CPU
  // saturates through the same common/tensor_stats_math.h, unit-tested).
  const int64_t n = (int64_t{1} << 31) + 5;
  const size_t bytes = static_cast<size_t>(n) * 2;
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  if (free_bytes < bytes + (size_t{1} << 30)) {
    GTEST_SKIP() << "needs " << (bytes >> 20) << " MiB free on the GPU, has "
                 << (free_bytes >> 20);
  }
  sdk::DeviceBuffer xb, out;
  ASSERT_TRUE(d_.cuda().Allocate(bytes, MNT_MEMORY_WORKSPACE, &xb).ok());
  ASSERT_TRUE(d_.cuda().Allocate(16, MNT_MEMORY_WORKSPACE, &out).ok());
  ASSERT_EQ(cudaMemset(xb.data(), 0xff, bytes), cudaSuccess);  // 0xffff: a NaN
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int64_t two = 2;
  const MNT_Tensor x = sdk::MakeTensor(xb.data(), MNT_DTYPE_BF16, 1, &n);
  const MNT_Tensor range = sdk::MakeTensor(out.data(), MNT_DTYPE_F32, 1, &two);
  const MNT_Tensor counts =
      sdk::MakeTensor(static_cast<char*>(out.data()) + 8, MNT_DTYPE_I32, 1, &two);
  sdk::Status s = d_.cuda().Run(MNT_OP_TENSOR_STATS, {x}, {range, counts});
  if (s.ok()) s = d_.cuda().Synchronize();
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<uint8_t> got(16);
  ASSERT_TRUE(d_.cuda().ToHost(got.data(), out.data(), 16).ok());
  const float zeros[2] = {0.0f, 0.0f};
  const int32_t saturated[2] = {INT32_MAX, INT32_MAX};
  std::vector<uint8_t> want(16);
  std::memcpy(want.data(), zeros, 8);
  std::memcpy(want.data() + 8, saturated, 8);
  EXPECT_EQ(got, want) << Show(got);
}

TEST_F(CudaTensorStatsTest, RefusesAsTheContractSays) {
  auto x = d_.Upload({1.0f, 2.0f, 3.0f}, MNT_DTYPE_F16, {3});
  auto range3 = d_.Poisoned(MNT_DTYPE_F32, {3});
  auto counts = d_.UploadI32({0, 0}, {2});
  EXPECT_EQ(d_.RunCuda(MNT_OP_TENSOR_STATS, {x.get()}, {range3.get(), counts.get()}).message(),
            "TENSOR_STATS: out[0] range is f32[3], expected f32[2] (smallest and largest "
            "finite |x|)");
  auto range = d_.Poisoned(MNT_DTYPE_F32, {2});
  EXPECT_EQ(d_.RunCuda(MNT_OP_TENSOR_STATS, {x.get()}, {range.get(), range.get()}).message(),
            "TENSOR_STATS: out[1] counts is f32[2], expected i32[2] (inf-or-NaN and NaN "
            "counts)");
  EXPECT_EQ(d_.RunCuda(MNT_OP_TENSOR_STATS, {x.get()}, {range.get()}).message(),
            "TENSOR_STATS: got 1 outputs, expected 2");
}

}  // namespace
}  // namespace mnt::cuda

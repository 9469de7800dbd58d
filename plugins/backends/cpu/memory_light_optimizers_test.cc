// ADAMW8BIT_STEP and ADAFACTOR_STEP (ABI 1.12) on the CPU backend: several
// steps against the float64 references of plugins/conformance/
// optimizer_references.h in every gradient dtype, with the multiplier, the
// device learning rate and the step counter; found_inf skips bit for bit;
// one 8-bit step from a zero state writes ADAMW_STEP's weights; the same
// bits for 1 and 4 threads; the contract's refusals.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"
#include "plugins/conformance/optimizer_references.h"

namespace mnt::cpu {
namespace {

using conformance::AdafactorExpected;
using conformance::AdafactorReference;
using conformance::AdafactorState;
using conformance::AdamW8bitExpected;
using conformance::AdamW8bitReference;
using conformance::AdamW8bitState;
using testing::BackendFixture;
using testing::FloatDTypes;
using testing::HostOperand;
using testing::RunOnFreshBackend;

std::vector<float> Floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

class MemoryLightOptimizersTest : public BackendFixture {
 protected:
  std::vector<uint8_t> RandomCodes(int64_t n) {
    std::vector<uint8_t> c(n);
    for (uint8_t& x : c) x = static_cast<uint8_t>(rng()() & 0xff);
    return c;
  }
};

// ---- ADAMW8BIT_STEP --------------------------------------------------------

struct Tensors8bit {
  MNT_Tensor master, m_codes, m_absmax, v_codes, v_absmax, working;
};

TEST_F(MemoryLightOptimizersTest, AdamW8bitMatchesFloat64OverSteps) {
  const int64_t n = 1000;  // four blocks, the last of 232 elements
  const int64_t blocks = QuantizationBlocks(n);
  for (MNT_DType grad_dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(grad_dtype));
    Tensors8bit t;
    t.master = Upload(Random(n), MNT_DTYPE_F32, {n}, MNT_MEMORY_MASTER_WEIGHTS);
    t.m_codes = UploadBytes(RandomCodes(n), MNT_DTYPE_U8, {n});
    t.m_absmax = Upload(Random(blocks, 0.01, 0.1), MNT_DTYPE_F32, {blocks});
    t.v_codes = UploadBytes(RandomCodes(n), MNT_DTYPE_U8, {n});
    t.v_absmax = Upload(Random(blocks, 1e-4, 1e-2), MNT_DTYPE_F32, {blocks});
    t.working = Empty(MNT_DTYPE_BF16, {n});
    MNT_Tensor mult = Upload({0.75}, MNT_DTYPE_F32, {1});
    MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
    MNT_Tensor counter = UploadI32({3}, {1});
    MNT_Tensor lr = Upload({2e-3}, MNT_DTYPE_F32, {1});
    const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 99.0f, 0.9f, 0.999f, 1e-8f, 0.1f, 1};
    for (int k = 0; k < 4; ++k) {
      // Steps 4..7 from the counter (params->step ignored), lr from the device.
      const std::vector<float> g = Floats(Stored(Random(n), grad_dtype));
      AdamW8bitState in{Floats(Download(t.master)), Bytes(t.m_codes), Bytes(t.v_codes),
                        Floats(Download(t.m_absmax)), Floats(Download(t.v_absmax))};
      ASSERT_TRUE(Run(MNT_OP_ADAMW8BIT_STEP,
                      {Upload({g.begin(), g.end()}, grad_dtype, {n}), found, mult, counter, lr},
                      {t.master, t.m_codes, t.m_absmax, t.v_codes, t.v_absmax, t.working}, &p)
                      .ok());
      const AdamW8bitState got{Floats(Download(t.master)), Bytes(t.m_codes), Bytes(t.v_codes),
                               Floats(Download(t.m_absmax)), Floats(Download(t.v_absmax))};
      const AdamW8bitExpected want = AdamW8bitReference(g, 0.75f, in, p, 2e-3f, 4 + k);
      ASSERT_EQ(CompareAdamW8bit(in, got, want), "") << "step " << 4 + k;
      EXPECT_EQ(Download(counter)[0], 4 + k);
      const std::vector<double> working = Download(t.working);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(working[i], Stored({got.master[i]}, MNT_DTYPE_BF16)[0]);
    }
    // An overflow step changes no byte, the counter included.
    MNT_Tensor inf = Upload({1.0}, MNT_DTYPE_F32, {1});
    const auto before = {Bytes(t.master), Bytes(t.m_codes), Bytes(t.m_absmax), Bytes(t.v_codes),
                         Bytes(t.v_absmax), Bytes(counter)};
    ASSERT_TRUE(Run(MNT_OP_ADAMW8BIT_STEP, {Upload(Random(n), grad_dtype, {n}), inf, mult, counter},
                    {t.master, t.m_codes, t.m_absmax, t.v_codes, t.v_absmax}, &p)
                    .ok());
    const auto after = {Bytes(t.master), Bytes(t.m_codes), Bytes(t.m_absmax), Bytes(t.v_codes),
                        Bytes(t.v_absmax), Bytes(counter)};
    EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
  }
}

TEST_F(MemoryLightOptimizersTest, AdamW8bitFromZeroStepsAsAdamW) {
  // Step 1 from a zero state updates the weights with the fp32 moments
  // before they are quantized: ADAMW_STEP's bits.
  const int64_t n = 700, blocks = QuantizationBlocks(n);
  const std::vector<double> w0 = Random(n), g = Random(n);
  MNT_Tensor w8 = Upload(w0, MNT_DTYPE_F32, {n}), w32 = Upload(w0, MNT_DTYPE_F32, {n});
  const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1};
  ASSERT_TRUE(Run(MNT_OP_ADAMW8BIT_STEP, {Upload(g, MNT_DTYPE_F32, {n})},
                  {w8, UploadBytes(std::vector<uint8_t>(n, 0), MNT_DTYPE_U8, {n}),
                   Upload(std::vector<double>(blocks, 0.0), MNT_DTYPE_F32, {blocks}),
                   UploadBytes(std::vector<uint8_t>(n, 0), MNT_DTYPE_U8, {n}),
                   Upload(std::vector<double>(blocks, 0.0), MNT_DTYPE_F32, {blocks})},
                  &p)
                  .ok());
  ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {Upload(g, MNT_DTYPE_F32, {n})},
                  {w32, Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}),
                   Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n})},
                  &p)
                  .ok());
  EXPECT_EQ(Bytes(w8), Bytes(w32));
}

TEST_F(MemoryLightOptimizersTest, AdamW8bitBitsDoNotDependOnThreads) {
  const int64_t n = 300001, blocks = QuantizationBlocks(n);
  std::vector<float> w(n), g(n), ma(blocks), va(blocks);
  for (int64_t i = 0; i < n; ++i) {
    w[i] = static_cast<float>(Random(1)[0]);
    g[i] = static_cast<float>(Random(1)[0]);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    ma[b] = static_cast<float>(Random(1, 0.01, 0.1)[0]);
    va[b] = static_cast<float>(Random(1, 1e-4, 1e-2)[0]);
  }
  const std::vector<HostOperand> in = {{MNT_DTYPE_F32, {n}, F32Bytes(g)}};
  const std::vector<HostOperand> out = {{MNT_DTYPE_F32, {n}, F32Bytes(w)},
                                        {MNT_DTYPE_U8, {n}, RandomCodes(n)},
                                        {MNT_DTYPE_F32, {blocks}, F32Bytes(ma)},
                                        {MNT_DTYPE_U8, {n}, RandomCodes(n)},
                                        {MNT_DTYPE_F32, {blocks}, F32Bytes(va)},
                                        {MNT_DTYPE_BF16, {n}, std::vector<uint8_t>(2 * n, 0)}};
  const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 9};
  const auto one = RunOnFreshBackend("threads=1", MNT_OP_ADAMW8BIT_STEP, in, out, &p);
  const auto four = RunOnFreshBackend("threads=4", MNT_OP_ADAMW8BIT_STEP, in, out, &p);
  ASSERT_EQ(one.size(), 6u);
  for (size_t o = 0; o < one.size(); ++o) EXPECT_TRUE(one[o] == four[o]) << "out[" << o << "]";
  EXPECT_FALSE(one[1] == out[1].bytes) << "the step changed no code";
}

TEST_F(MemoryLightOptimizersTest, AdamW8bitRefusals) {
  const int64_t n = 300, blocks = 2;
  MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_Tensor w = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_Tensor codes = UploadBytes(std::vector<uint8_t>(n, 0), MNT_DTYPE_U8, {n});
  MNT_Tensor absmax = Upload({0.0, 0.0}, MNT_DTYPE_F32, {blocks});
  MNT_Tensor f32_codes = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_Tensor short_absmax = Upload({0.0}, MNT_DTYPE_F32, {1});
  MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1};
  auto run = [&](const std::vector<MNT_Tensor>& out, const MNT_AdamWParams* params) {
    return Run(MNT_OP_ADAMW8BIT_STEP, {g}, out, params).message();
  };
  EXPECT_EQ(run({w, codes, absmax, codes, absmax}, &p), "");
  EXPECT_EQ(run({w, f32_codes, absmax, codes, absmax}, &p),
            "ADAMW8BIT_STEP: out[1] m_codes is f32[300], expected dtype u8");
  EXPECT_EQ(run({w, codes, short_absmax, codes, absmax}, &p),
            "ADAMW8BIT_STEP: out[2] m_absmax is f32[1], expected f32 with 2 elements, one per "
            "256-element block of in[0] grad");
  EXPECT_EQ(run({w, codes, absmax, codes}, &p), "ADAMW8BIT_STEP: got 4 outputs, expected 5 to 6");
  MNT_AdamWParams short_p = p;
  short_p.struct_size = MNT_AdamWParams_STRUCT_SIZE_1_10;
  EXPECT_EQ(run({w, codes, absmax, codes, absmax}, &short_p),
            "ADAMW8BIT_STEP: MNT_AdamWParams.struct_size 64 is smaller than 72");
  p.step = 0;
  EXPECT_EQ(run({w, codes, absmax, codes, absmax}, &p),
            "ADAMW8BIT_STEP: step 0 must be >= 1 (1-based)");
}

// ---- ADAFACTOR_STEP --------------------------------------------------------

MNT_AdafactorParams AdafactorDefaults() {
  MNT_AdafactorParams p{};
  p.struct_size = MNT_AdafactorParams_STRUCT_SIZE;
  p.lr = 1e-2f;
  p.decay_rate = -0.8f;
  p.epsilon1 = 1e-30f;
  p.epsilon2 = 1e-3f;
  p.clip_threshold = 1.0f;
  p.step = 1;
  return p;
}

TEST_F(MemoryLightOptimizersTest, AdafactorMatchesFloat64OverSteps) {
  const std::vector<std::vector<int64_t>> shapes = {{37}, {33, 70}, {3, 20, 41}};
  int variant = 0;
  for (const std::vector<int64_t>& dims : shapes) {
    for (MNT_DType grad_dtype : FloatDTypes()) {
      ++variant;
      const FactoredShape s = FactoredShapeOf(dims.data(), static_cast<int>(dims.size()));
      const int64_t n = s.numel();
      MNT_AdafactorParams p = AdafactorDefaults();
      p.beta1 = variant % 2 ? 0.9f : 0.0f;
      p.relative_step = variant % 3 == 0;
      p.scale_parameter = variant % 4 < 2;
      p.weight_decay = variant % 5 == 0 ? 0.01f : 0.0f;
      p.step = 5;
      SCOPED_TRACE(::testing::Message() << "shape rank " << dims.size() << " grad "
                                        << sdk::DTypeName(grad_dtype) << " beta1 " << p.beta1
                                        << " relative_step " << p.relative_step
                                        << " scale_parameter " << p.scale_parameter);
      MNT_Tensor master = Upload(Random(n), MNT_DTYPE_F32, {n});
      const int64_t second_n = s.factored ? s.row_count() : n;
      MNT_Tensor second = Upload(Random(second_n, 1e-3, 2e-3), MNT_DTYPE_F32, {second_n});
      MNT_Tensor col = s.factored ? Upload(Random(s.col_states(), 1e-3, 2e-3), MNT_DTYPE_F32,
                                           {s.col_states()})
                                  : sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
      MNT_Tensor m = p.beta1 != 0.0f ? Upload(Random(n, -1e-3, 1e-3), MNT_DTYPE_F32, {n})
                                     : sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
      MNT_Tensor working = Empty(MNT_DTYPE_F16, {n});
      MNT_Tensor mult = Upload({0.5}, MNT_DTYPE_F32, {1});
      const bool with_counter = variant % 2 == 0;
      MNT_Tensor counter = UploadI32({4}, {1});
      MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1});
      auto state = [&] {
        return AdafactorState{Floats(Download(master)), Floats(Download(second)),
                              s.factored ? Floats(Download(col)) : std::vector<float>{},
                              p.beta1 != 0.0f ? Floats(Download(m)) : std::vector<float>{}};
      };
      for (int k = 0; k < 3; ++k) {
        const std::vector<float> g = Floats(Stored(Random(n, -0.05, 0.05), grad_dtype));
        const AdafactorState in = state();
        MNT_Tensor grad = Upload({g.begin(), g.end()}, grad_dtype, {n});
        grad.rank = static_cast<int32_t>(dims.size());
        for (size_t d = 0; d < dims.size(); ++d) grad.dims[d] = dims[d];
        ASSERT_TRUE(Run(MNT_OP_ADAFACTOR_STEP,
                        {grad, sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}), mult,
                         with_counter ? counter : absent},
                        {master, second, col, m, working}, &p)
                        .ok());
        const int64_t step = with_counter ? 5 + k : p.step;
        const AdafactorExpected want = AdafactorReference(g, 0.5f, s, in, p, p.lr, step);
        ASSERT_EQ(CompareAdafactor(in, state(), want), "") << "step " << step;
        if (!with_counter) ++p.step;
      }
      if (with_counter) {
        EXPECT_EQ(Download(counter)[0], 7);
      }
    }
  }
}

TEST_F(MemoryLightOptimizersTest, AdafactorSkipsOnFoundInfAndTakesTheDeviceLr) {
  const int64_t n = 60;
  MNT_AdafactorParams p = AdafactorDefaults();
  MNT_Tensor master = Upload(Random(n), MNT_DTYPE_F32, {6, 10});
  MNT_Tensor row = Upload(Random(6, 1e-3, 2e-3), MNT_DTYPE_F32, {6});
  MNT_Tensor col = Upload(Random(10, 1e-3, 2e-3), MNT_DTYPE_F32, {10});
  MNT_Tensor g = Upload(Random(n), MNT_DTYPE_BF16, {6, 10});
  const auto w0 = Bytes(master), r0 = Bytes(row), c0 = Bytes(col);
  ASSERT_TRUE(Run(MNT_OP_ADAFACTOR_STEP, {g, Upload({1.0}, MNT_DTYPE_F32, {1})},
                  {master, row, col}, &p)
                  .ok());
  EXPECT_EQ(Bytes(master), w0);
  EXPECT_EQ(Bytes(row), r0);
  EXPECT_EQ(Bytes(col), c0);
  // The device lr replaces params->lr: the same bits as the host float.
  MNT_Tensor master2 = Upload(Download(master), MNT_DTYPE_F32, {6, 10});
  MNT_Tensor row2 = Upload(Download(row), MNT_DTYPE_F32, {6});
  MNT_Tensor col2 = Upload(Download(col), MNT_DTYPE_F32, {10});
  ASSERT_TRUE(Run(MNT_OP_ADAFACTOR_STEP, {g}, {master, row, col}, &p).ok());
  MNT_AdafactorParams other = p;
  other.lr = 123.0f;
  MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  ASSERT_TRUE(Run(MNT_OP_ADAFACTOR_STEP,
                  {g, absent, absent, sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}),
                   Upload({p.lr}, MNT_DTYPE_F32, {1})},
                  {master2, row2, col2}, &other)
                  .ok());
  EXPECT_EQ(Bytes(master2), Bytes(master));
  EXPECT_NE(Bytes(master), w0);
}

TEST_F(MemoryLightOptimizersTest, AdafactorBitsDoNotDependOnThreads) {
  const std::vector<std::vector<int64_t>> shapes = {{4, 300, 257}, {2, 100000}, {70001}};
  for (const std::vector<int64_t>& dims : shapes) {
    const FactoredShape s = FactoredShapeOf(dims.data(), static_cast<int>(dims.size()));
    const int64_t n = s.numel(), second_n = s.factored ? s.row_count() : n;
    auto floats = [&](int64_t k, double lo, double hi) {
      const std::vector<double> d = Random(k, lo, hi);
      return std::vector<float>(d.begin(), d.end());
    };
    // Factored: every output (first moment, working copy); the rank-1
    // tensor (no column state to leave out) only the two it needs.
    MNT_AdafactorParams p = AdafactorDefaults();
    p.beta1 = s.factored ? 0.9f : 0.0f;
    p.scale_parameter = 1;
    p.step = 11;
    std::vector<HostOperand> out = {{MNT_DTYPE_F32, dims, F32Bytes(floats(n, -1, 1))},
                                    {MNT_DTYPE_F32, {second_n}, F32Bytes(floats(second_n, 1e-3, 2e-3))}};
    if (s.factored) {
      out.push_back({MNT_DTYPE_F32, {s.col_states()}, F32Bytes(floats(s.col_states(), 1e-3, 2e-3))});
      out.push_back({MNT_DTYPE_F32, {n}, F32Bytes(floats(n, -1e-3, 1e-3))});
      out.push_back({MNT_DTYPE_BF16, {n}, std::vector<uint8_t>(2 * n, 0)});
    }
    const std::vector<HostOperand> in = {{MNT_DTYPE_F16, dims, [&] {
                                            std::vector<uint8_t> b(2 * n);
                                            for (int64_t i = 0; i < n; ++i) {
                                              const uint16_t h = static_cast<uint16_t>(
                                                  0x3000 + (rng()() & 0x0fff));  // 0.125..0.25: clipping is on
                                              std::memcpy(&b[2 * i], &h, 2);
                                            }
                                            return b;
                                          }()}};
    const auto one = RunOnFreshBackend("threads=1", MNT_OP_ADAFACTOR_STEP, in, out, &p);
    const auto four = RunOnFreshBackend("threads=4", MNT_OP_ADAFACTOR_STEP, in, out, &p);
    ASSERT_EQ(one.size(), out.size());
    for (size_t o = 0; o < one.size(); ++o) {
      EXPECT_TRUE(one[o] == four[o]) << "rank " << dims.size() << " out[" << o << "]";
    }
    EXPECT_FALSE(one[0] == out[0].bytes) << "the step changed no weight";
  }
}

TEST_F(MemoryLightOptimizersTest, AdafactorRefusals) {
  MNT_AdafactorParams p = AdafactorDefaults();
  MNT_Tensor g2 = Upload(Random(12), MNT_DTYPE_F32, {3, 4});
  MNT_Tensor g1 = Upload(Random(12), MNT_DTYPE_F32, {12});
  MNT_Tensor w = Upload(Random(12), MNT_DTYPE_F32, {12});
  MNT_Tensor row = Upload(Random(3, 1, 2), MNT_DTYPE_F32, {3});
  MNT_Tensor col = Upload(Random(4, 1, 2), MNT_DTYPE_F32, {4});
  MNT_Tensor v = Upload(Random(12, 1, 2), MNT_DTYPE_F32, {12});
  auto run = [&](const MNT_Tensor& g, const std::vector<MNT_Tensor>& out) {
    return Run(MNT_OP_ADAFACTOR_STEP, {g}, out, &p).message();
  };
  EXPECT_EQ(run(g2, {w, row, col}), "");
  EXPECT_EQ(run(g1, {w, v}), "");
  EXPECT_EQ(run(g2, {w, row}), "ADAFACTOR_STEP: out[2] col_state is missing, but in[0] grad "
                               "has rank 2 (factored)");
  EXPECT_EQ(run(g1, {w, v, col}), "ADAFACTOR_STEP: out[2] col_state is given, but in[0] grad "
                                  "has rank 1 (not factored)");
  EXPECT_EQ(run(g2, {w, v, col}),
            "ADAFACTOR_STEP: out[1] row_state is f32[12], expected f32 with 3 elements like in[0] "
            "grad");
  EXPECT_EQ(run(g2, {w, row, col, w}),
            "ADAFACTOR_STEP: out[3] first_moment is given but beta1 is 0 (no first moment)");
  p.beta1 = 0.9f;
  EXPECT_EQ(run(g2, {w, row, col}),
            "ADAFACTOR_STEP: out[3] first_moment is missing but beta1 is 0.9");
  p.beta1 = 0.0f;
  p.decay_rate = 0.5f;
  EXPECT_EQ(run(g2, {w, row, col}),
            "ADAFACTOR_STEP: decay_rate 0.5 must be negative (beta2_t = 1 - t^decay_rate)");
  p.decay_rate = -0.8f;
  p.clip_threshold = 0.0f;
  EXPECT_EQ(run(g2, {w, row, col}), "ADAFACTOR_STEP: clip_threshold 0 must be positive");
}

}  // namespace
}  // namespace mnt::cpu

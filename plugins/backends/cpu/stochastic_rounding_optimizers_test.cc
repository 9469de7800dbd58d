// ABI 1.7 stochastic rounding of the optimizers' bf16 working copy: every
// element is the specified bits (common/stochastic_rounding.h) of the new
// master, keyed by (seed, step, tensor index, element); the master and the
// state are those of round-to-nearest; the single- and multi-tensor ops and
// the host and device step counters agree; one op refuses other working
// dtypes and unknown modes; a 1.6 caller's struct rounds to nearest; a 1.10
// caller's struct (before the 1.11 piece fields) draws element i's bits at
// element index i and table entry t's at tensor index rounding_tensor + t.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::BackendFixture;

// One tensor above the CPU's threading threshold (16384), one tiny.
const std::vector<int64_t> kSizes = {20011, 3};
constexpr uint64_t kSeed = 0x0123456789abcdefull;

class StochasticRoundingOptimizersTest : public BackendFixture {
 protected:
  std::vector<uint16_t> Bf16Bits(const MNT_Tensor& t) {
    const std::vector<uint8_t> b = Bytes(t);
    std::vector<uint16_t> out(b.size() / 2);
    std::memcpy(out.data(), b.data(), b.size());
    return out;
  }
  std::vector<float> F32(const MNT_Tensor& t) {
    const std::vector<uint8_t> b = Bytes(t);
    std::vector<float> out(b.size() / 4);
    std::memcpy(out.data(), b.data(), b.size());
    return out;
  }
  // The working copy must be each master element's stochastic bits under
  // (seed, step, tensor); returns how many differ from round-to-nearest.
  int64_t ExpectStochasticCopy(const MNT_Tensor& master, const MNT_Tensor& working,
                               uint64_t seed, int64_t step, int64_t tensor) {
    const std::vector<float> w = F32(master);
    const std::vector<uint16_t> got = Bf16Bits(working);
    const uint64_t key = StochasticRoundingKey(seed, step, tensor);
    int64_t differ_from_nearest = 0, wrong = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const uint16_t want = FloatToBf16BitsStochastic(w[i], key, static_cast<int64_t>(i));
      if (got[i] != want && wrong++ < 5) {
        ADD_FAILURE() << "element " << i << " of " << w.size() << ": 0x" << std::hex << got[i]
                      << ", want 0x" << want;
      }
      differ_from_nearest += got[i] != FloatToBf16Bits(w[i]);
    }
    return differ_from_nearest;
  }
};

TEST_F(StochasticRoundingOptimizersTest, AdamWWritesTheSpecifiedBits) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    MNT_Tensor w = Upload(Random(n), MNT_DTYPE_F32, {n});
    MNT_Tensor m = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
    MNT_Tensor v = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
    MNT_Tensor working = Empty(MNT_DTYPE_BF16, {n});
    // The same state stepped with round-to-nearest: the master and moments
    // must not notice the rounding mode.
    MNT_Tensor w2 = Upload(Download(w), MNT_DTYPE_F32, {n});
    MNT_Tensor m2 = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
    MNT_Tensor v2 = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
    MNT_Tensor working2 = Empty(MNT_DTYPE_BF16, {n});
    int64_t differ = 0;
    for (int64_t step = 1; step <= 3; ++step) {
      MNT_Tensor g = Upload(Random(n), MNT_DTYPE_BF16, {n});
      const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                              step, MNT_ROUNDING_STOCHASTIC, kSeed, 5};
      ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g}, {w, m, v, working}, &p).ok());
      MNT_AdamWParams nearest = p;
      nearest.rounding = MNT_ROUNDING_NEAREST_EVEN;
      ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g}, {w2, m2, v2, working2}, &nearest).ok());
      differ += ExpectStochasticCopy(w, working, kSeed, step, 5);
    }
    EXPECT_EQ(Bytes(w), Bytes(w2));
    EXPECT_EQ(Bytes(m), Bytes(m2));
    EXPECT_EQ(Bytes(v), Bytes(v2));
    // Round-to-nearest's copy is the masters rounded to nearest.
    const std::vector<float> master = F32(w2);
    const std::vector<uint16_t> nearest_bits = Bf16Bits(working2);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(nearest_bits[i], FloatToBf16Bits(master[i])) << i;
    // The stochastic copy differs from it where the draw and the nearest
    // neighbour disagree: probability min(p, 1 - p) for a dropped fraction p,
    // a quarter of the elements for uniform p (3n/4 over three steps).
    if (n > 100) {
      EXPECT_GT(differ, 3 * n / 5);
      EXPECT_LT(differ, 6 * n / 5);
    }
  }
}

TEST_F(StochasticRoundingOptimizersTest, AdamWStepCounterGivesTheSameBitsAsTheHostStep) {
  const int64_t n = kSizes[0];
  const std::vector<double> w0 = Random(n);
  MNT_Tensor wa = Upload(w0, MNT_DTYPE_F32, {n}), wb = Upload(w0, MNT_DTYPE_F32, {n});
  MNT_Tensor ma = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
  MNT_Tensor mb = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
  MNT_Tensor va = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
  MNT_Tensor vb = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
  MNT_Tensor ka = Empty(MNT_DTYPE_BF16, {n}), kb = Empty(MNT_DTYPE_BF16, {n});
  MNT_Tensor counter = UploadI32({6}, {1});  // six steps applied before
  MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                    7, MNT_ROUNDING_STOCHASTIC, kSeed, 0};
  ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g}, {wa, ma, va, ka}, &p).ok());
  p.step = 1;  // ignored with a counter
  ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g, absent, absent, counter}, {wb, mb, vb, kb}, &p).ok());
  EXPECT_EQ(Bytes(wa), Bytes(wb));
  EXPECT_EQ(Bytes(ka), Bytes(kb));
  ExpectStochasticCopy(wb, kb, kSeed, 7, 0);
}

TEST_F(StochasticRoundingOptimizersTest, SgdUsesItsRoundingStep) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    MNT_Tensor w = Upload(Random(n), MNT_DTYPE_F32, {n});
    MNT_Tensor buf = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
    MNT_Tensor working = Empty(MNT_DTYPE_BF16, {n});
    for (int64_t step = 40; step < 42; ++step) {
      const MNT_SgdParams p{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1,
                            MNT_ROUNDING_STOCHASTIC, kSeed + 1, 2, step};
      ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {Upload(Random(n), MNT_DTYPE_F16, {n})},
                      {w, buf, working}, &p).ok());
      ExpectStochasticCopy(w, working, kSeed + 1, step, 2);
    }
  }
}

// Tensor i of a table takes tensor index rounding_tensor + i: the same bits
// as the single-tensor ops given that index.
TEST_F(StochasticRoundingOptimizersTest, MultiTensorOpsGiveTheSingleOpsBits) {
  const int64_t base = 10;
  std::vector<MNT_Tensor> grads, multi_out, single_out, counters;
  std::vector<MNT_Tensor> adam_in{sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}),
                                  Upload({0.5}, MNT_DTYPE_F32, {1})};
  for (int64_t n : kSizes) {
    const std::vector<double> w0 = Random(n);
    MNT_Tensor g = Upload(Random(n), MNT_DTYPE_BF16, {n});
    grads.push_back(g);
    adam_in.push_back(g);
    adam_in.push_back(UploadI32({2}, {1}));
    counters.push_back(UploadI32({2}, {1}));
    for (std::vector<MNT_Tensor>* out : {&multi_out, &single_out}) {
      out->push_back(Upload(w0, MNT_DTYPE_F32, {n}));
      out->push_back(Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}));
      out->push_back(Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}));
      out->push_back(Empty(MNT_DTYPE_BF16, {n}));
    }
  }
  const int64_t count = static_cast<int64_t>(kSizes.size());
  MNT_MultiAdamWParams mp{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                          1, count, nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, base};
  ASSERT_TRUE(Run(MNT_OP_MULTI_ADAMW_STEP, adam_in, multi_out, &mp).ok());
  for (int64_t i = 0; i < count; ++i) {
    const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                            1, MNT_ROUNDING_STOCHASTIC, kSeed, base + i};
    MNT_Tensor mult = Upload({0.5}, MNT_DTYPE_F32, {1});
    MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
    ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {grads[i], absent, mult, counters[i]},
                    {single_out[4 * i], single_out[4 * i + 1], single_out[4 * i + 2],
                     single_out[4 * i + 3]},
                    &p).ok());
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(Bytes(multi_out[4 * i + k]), Bytes(single_out[4 * i + k])) << i << "," << k;
    }
    ExpectStochasticCopy(multi_out[4 * i], multi_out[4 * i + 3], kSeed, 3, base + i);
  }

  // SGD over the same masters: out[3i] master, out[3i+1] momentum, out[3i+2] copy.
  std::vector<MNT_Tensor> sgd_in{sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}),
                                 sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1})};
  std::vector<MNT_Tensor> sgd_multi, sgd_single;
  for (int64_t i = 0; i < count; ++i) {
    sgd_in.push_back(grads[i]);
    const std::vector<double> w0 = Download(multi_out[4 * i]);
    const int64_t n = kSizes[i];
    for (std::vector<MNT_Tensor>* out : {&sgd_multi, &sgd_single}) {
      out->push_back(Upload(w0, MNT_DTYPE_F32, {n}));
      out->push_back(Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}));
      out->push_back(Empty(MNT_DTYPE_BF16, {n}));
    }
  }
  const MNT_MultiSgdParams sp{MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 0, count,
                              nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, base, 77};
  ASSERT_TRUE(Run(MNT_OP_MULTI_SGD_STEP, sgd_in, sgd_multi, &sp).ok());
  for (int64_t i = 0; i < count; ++i) {
    const MNT_SgdParams p{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 0,
                          MNT_ROUNDING_STOCHASTIC, kSeed, base + i, 77};
    ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {grads[i]},
                    {sgd_single[3 * i], sgd_single[3 * i + 1], sgd_single[3 * i + 2]}, &p)
                    .ok());
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(Bytes(sgd_multi[3 * i + k]), Bytes(sgd_single[3 * i + k])) << i << "," << k;
    }
    ExpectStochasticCopy(sgd_multi[3 * i], sgd_multi[3 * i + 2], kSeed, 77, base + i);
  }
}

TEST_F(StochasticRoundingOptimizersTest, RefusesOtherWorkingDTypesAndUnknownModes) {
  const int64_t n = 8;
  MNT_Tensor w = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                    1, MNT_ROUNDING_STOCHASTIC, kSeed, 0};
  EXPECT_EQ(Run(MNT_OP_ADAMW_STEP, {g}, {w, w, w, Empty(MNT_DTYPE_F16, {n})}, &p).message(),
            "ADAMW_STEP: out[3] working_copy is f16, but stochastic rounding writes a bf16 "
            "working copy");
  const MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.0f, 0.0f, 0,
                        MNT_ROUNDING_STOCHASTIC, kSeed, 0, 1};
  EXPECT_EQ(Run(MNT_OP_SGD_STEP, {g}, {w, w, Empty(MNT_DTYPE_F32, {n})}, &s).message(),
            "SGD_STEP: out[2] working_copy is f32, but stochastic rounding writes a bf16 "
            "working copy");
  // Without a working copy there is nothing to round: allowed.
  EXPECT_TRUE(Run(MNT_OP_ADAMW_STEP, {g}, {w, Upload(Random(n), MNT_DTYPE_F32, {n}),
                                           Upload(Random(n, 0, 1), MNT_DTYPE_F32, {n})},
                  &p)
                  .ok());
  const int32_t unknown = 7;
  std::memcpy(&p.rounding, &unknown, sizeof(unknown));
  EXPECT_EQ(Run(MNT_OP_ADAMW_STEP, {g}, {w, w, w}, &p).message(),
            "ADAMW_STEP: rounding 7 is not an MNT_Rounding");
}

// A 1.6 caller's params end before the rounding fields: whatever follows in
// its memory is not read, and the copy is rounded to nearest.
TEST_F(StochasticRoundingOptimizersTest, A16CallersStructRoundsToNearest) {
  const int64_t n = kSizes[0];
  MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_Tensor w = Upload(Random(n), MNT_DTYPE_F32, {n});
  MNT_Tensor buf = Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n});
  MNT_Tensor working = Empty(MNT_DTYPE_BF16, {n});
  MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE_1_6, 0.1f, 0.9f, 0.0f, 0,
                  MNT_ROUNDING_STOCHASTIC, kSeed, 0, 1};
  ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {g}, {w, buf, working}, &s).ok());
  const std::vector<float> master = F32(w);
  const std::vector<uint16_t> copy = Bf16Bits(working);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(copy[i], FloatToBf16Bits(master[i])) << i;
  MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE_1_6, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                    1, MNT_ROUNDING_STOCHASTIC, kSeed, 0};
  ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g},
                  {w, Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}),
                   Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}), working},
                  &a).ok());
  const std::vector<float> master2 = F32(w);
  const std::vector<uint16_t> copy2 = Bf16Bits(working);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(copy2[i], FloatToBf16Bits(master2[i])) << i;
}

// A 1.10 caller's params end before the 1.11 piece fields
// (rounding_element; rounding_tensors/rounding_elements): whatever follows
// in its memory -- here values that would change the bits, and ones the
// 1.11 check would refuse -- is not read.
TEST_F(StochasticRoundingOptimizersTest, A110CallersStructUsesElementZeroAndTensorPlusI) {
  const int64_t n = kSizes[0];
  MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  for (int64_t stray : {int64_t{1000}, int64_t{-5}}) {
    SCOPED_TRACE(stray);
    MNT_Tensor w = Upload(Random(n), MNT_DTYPE_F32, {n});
    MNT_Tensor working = Empty(MNT_DTYPE_BF16, {n});
    MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE_1_10, 0.1f, 0.0f, 0.0f, 0,
                    MNT_ROUNDING_STOCHASTIC, kSeed, 4, 9, stray};
    ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {g}, {w, sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {n}),
                                           working},
                    &s)
                    .ok());
    ExpectStochasticCopy(w, working, kSeed, 9, 4);
    MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE_1_10, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                      2, MNT_ROUNDING_STOCHASTIC, kSeed, 5, stray};
    ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g},
                    {w, Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}),
                     Upload(std::vector<double>(n, 0.0), MNT_DTYPE_F32, {n}), working},
                    &a)
                    .ok());
    ExpectStochasticCopy(w, working, kSeed, 2, 5);
  }

  // The multi-tensor forms: tensor index rounding_tensor + t, element 0,
  // whatever the (unread) array pointers hold.
  const int64_t stray_tensors[2] = {40, -1}, stray_elements[2] = {-3, 77};
  std::vector<MNT_Tensor> grads, adam_in{sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}),
                                         sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1})};
  std::vector<MNT_Tensor> adam_out, sgd_out;
  std::vector<MNT_Tensor> sgd_in = adam_in;
  for (int64_t size : kSizes) {
    MNT_Tensor gi = Upload(Random(size), MNT_DTYPE_BF16, {size});
    adam_in.push_back(gi);
    adam_in.push_back(sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
    sgd_in.push_back(gi);
    adam_out.push_back(Upload(Random(size), MNT_DTYPE_F32, {size}));
    adam_out.push_back(Upload(std::vector<double>(size, 0.0), MNT_DTYPE_F32, {size}));
    adam_out.push_back(Upload(std::vector<double>(size, 0.0), MNT_DTYPE_F32, {size}));
    adam_out.push_back(Empty(MNT_DTYPE_BF16, {size}));
    sgd_out.push_back(Upload(Random(size), MNT_DTYPE_F32, {size}));
    sgd_out.push_back(sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {size}));
    sgd_out.push_back(Empty(MNT_DTYPE_BF16, {size}));
  }
  const int64_t count = static_cast<int64_t>(kSizes.size());
  const MNT_MultiAdamWParams mp{MNT_MultiAdamWParams_STRUCT_SIZE_1_10, 1e-3f, 0.9f, 0.999f,
                                1e-8f, 0.0f, 3, count, nullptr, nullptr,
                                MNT_ROUNDING_STOCHASTIC, kSeed, 20, stray_tensors,
                                stray_elements};
  ASSERT_TRUE(Run(MNT_OP_MULTI_ADAMW_STEP, adam_in, adam_out, &mp).ok());
  const MNT_MultiSgdParams sp{MNT_MultiSgdParams_STRUCT_SIZE_1_10, 0.1f, 0.0f, 0.0f, 0, count,
                              nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, 30, 8,
                              stray_tensors, stray_elements};
  ASSERT_TRUE(Run(MNT_OP_MULTI_SGD_STEP, sgd_in, sgd_out, &sp).ok());
  for (int64_t t = 0; t < count; ++t) {
    SCOPED_TRACE(t);
    ExpectStochasticCopy(adam_out[4 * t], adam_out[4 * t + 3], kSeed, 3, 20 + t);
    ExpectStochasticCopy(sgd_out[3 * t], sgd_out[3 * t + 2], kSeed, 8, 30 + t);
  }
}

}  // namespace
}  // namespace mnt::cpu

// ABI 1.7 stochastic rounding of the bf16 working copy on the cuda backend
// against the CPU backend, bit for bit: ADAMW_STEP (host step and device
// step counter), SGD_STEP, MULTI_ADAMW_STEP and MULTI_SGD_STEP, on sizes
// that take the 4-element vector path, a tail and many blocks. Each copy is
// also checked against the specified bits (common/stochastic_rounding.h) of
// the CPU's new master.
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::Pair;

constexpr uint64_t kSeed = 0xfeedfacecafebeefull;
const std::vector<int64_t> kSizes = {1027, 1, 70001};

class CudaStochasticRoundingTest : public testing::DualBackendTest {
 protected:
  void ExpectSameBits(const Pair& p, const char* what) {
    EXPECT_EQ(d_.Bytes(p, true), d_.Bytes(p, false)) << what;
  }
  // The CPU's copy is the specified bits of the CPU's master.
  void ExpectSpecified(const Pair& master, const Pair& working, int64_t step, int64_t tensor) {
    const std::vector<uint8_t> w = d_.Bytes(master, false), k = d_.Bytes(working, false);
    const uint64_t key = StochasticRoundingKey(kSeed, step, tensor);
    const size_t n = w.size() / 4;
    for (size_t i = 0; i < n; ++i) {
      float f;
      uint16_t got;
      std::memcpy(&f, w.data() + 4 * i, 4);
      std::memcpy(&got, k.data() + 2 * i, 2);
      ASSERT_EQ(got, FloatToBf16BitsStochastic(f, key, static_cast<int64_t>(i))) << i;
    }
  }
};

TEST_F(CudaStochasticRoundingTest, SingleTensorStepsMatchCpuBits) {
  for (int64_t n : kSizes) {
    for (bool counter : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " counter " << counter);
      auto g = d_.Upload(Random(n), MNT_DTYPE_BF16, {n});
      auto master = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
      auto m = d_.Upload(Random(n, 0.1f), MNT_DTYPE_F32, {n});
      std::vector<float> v0 = Random(n, 0.1f);
      for (float& e : v0) e = e * e;
      auto v = d_.Upload(v0, MNT_DTYPE_F32, {n});
      auto working = d_.Poisoned(MNT_DTYPE_BF16, {n});
      auto steps = d_.UploadI32({8}, {1});
      const MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                              9, MNT_ROUNDING_STOCHASTIC, kSeed, 3};
      std::vector<const Pair*> in{g.get()};
      if (counter) in = {g.get(), nullptr, nullptr, steps.get()};
      ASSERT_TRUE(d_.RunBoth(MNT_OP_ADAMW_STEP, in, {master.get(), m.get(), v.get(), working.get()},
                             &a)
                      .ok());
      for (const Pair* p : {master.get(), m.get(), v.get(), working.get()}) ExpectSameBits(*p, "adamw");
      ExpectSpecified(*master, *working, 9, 3);
      auto momentum = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
      const MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1,
                            MNT_ROUNDING_STOCHASTIC, kSeed, 4, 21};
      ASSERT_TRUE(d_.RunBoth(MNT_OP_SGD_STEP, {g.get()}, {master.get(), momentum.get(), working.get()},
                             &s)
                      .ok());
      for (const Pair* p : {master.get(), momentum.get(), working.get()}) ExpectSameBits(*p, "sgd");
      ExpectSpecified(*master, *working, 21, 4);
    }
  }
}

TEST_F(CudaStochasticRoundingTest, MultiTensorStepsMatchCpuBits) {
  for (bool adamw : {true, false}) {
    SCOPED_TRACE(adamw ? "adamw" : "sgd");
    auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
    std::vector<std::unique_ptr<Pair>> keep;
    std::vector<const Pair*> in{nullptr, mult.get()}, out;
    for (int64_t n : kSizes) {
      auto grad = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
      auto master = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
      auto m = d_.Upload(Random(n, 0.1f), MNT_DTYPE_F32, {n});
      auto v = d_.Upload(Random(n, 0.01f), MNT_DTYPE_F32, {n});
      auto working = d_.Poisoned(MNT_DTYPE_BF16, {n});
      auto counter = d_.UploadI32({2}, {1});
      in.push_back(grad.get());
      if (adamw) in.push_back(counter.get());
      out.insert(out.end(), {master.get(), m.get()});
      if (adamw) {
        // v >= 0 for AdamW.
        std::vector<float> sq = d_.Download(*v, false);
        for (float& e : sq) e = e * e;
        v = d_.Upload(sq, MNT_DTYPE_F32, {n});
        out.push_back(v.get());
      }
      out.push_back(working.get());
      for (auto* p : {&grad, &master, &m, &v, &working, &counter}) keep.push_back(std::move(*p));
    }
    const MNT_MultiAdamWParams ap{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f,
                                  0.01f, 1, 3, nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed,
                                  7};
    const MNT_MultiSgdParams sp{MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 0, 3,
                                nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, 7, 13};
    ASSERT_TRUE(d_.RunBoth(adamw ? MNT_OP_MULTI_ADAMW_STEP : MNT_OP_MULTI_SGD_STEP, in, out,
                           adamw ? static_cast<const void*>(&ap) : &sp)
                    .ok());
    for (const Pair* p : out) ExpectSameBits(*p, "multi");
    const size_t per = adamw ? 4 : 3;
    for (size_t i = 0; i < kSizes.size(); ++i) {
      ExpectSpecified(*out[per * i], *out[per * i + per - 1], adamw ? 3 : 13,
                      7 + static_cast<int64_t>(i));
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

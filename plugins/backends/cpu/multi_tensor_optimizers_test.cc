// MULTI_ADAMW_STEP and MULTI_SGD_STEP (ABI 1.6): the same bits as one
// ADAMW_STEP / SGD_STEP per tensor (per-tensor lr scale, weight decay,
// gradient dtype, working copy, step counters, found_inf skips), and the
// multi AdamW also against a float64 re-implementation of torch.optim.AdamW
// (1e-5 relative).
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;

constexpr int kSteps = 4;
// One tensor above the threading threshold, one scalar.
const std::vector<int64_t> kSizes = {97, 1, 20000};
const std::vector<MNT_DType> kGradDTypes = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16};
const std::vector<float> kLrScales = {1.0f, 0.5f, 3.0f};
const std::vector<float> kWeightDecays = {0.1f, 0.0f, 0.01f};

class MultiTensorOptimizersTest : public BackendFixture {
 protected:
  // One parameter tensor's state, twice: `a` stepped by the multi op, `b`
  // by the single-tensor op.
  struct Param {
    int64_t n;
    MNT_Tensor wa, s1a, s2a, worka, wb, s1b, s2b, workb, counter_a, counter_b;
  };
  Param MakeParam(int64_t n, bool working) {
    Param p{n};
    const std::vector<double> w = Stored(Random(n), MNT_DTYPE_F32);
    p.wa = Upload(w, MNT_DTYPE_F32, {n});
    p.wb = Upload(w, MNT_DTYPE_F32, {n});
    const std::vector<double> zeros(n, 0.0);
    p.s1a = Upload(zeros, MNT_DTYPE_F32, {n});
    p.s1b = Upload(zeros, MNT_DTYPE_F32, {n});
    p.s2a = Upload(zeros, MNT_DTYPE_F32, {n});
    p.s2b = Upload(zeros, MNT_DTYPE_F32, {n});
    const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_BF16, {n});
    p.worka = working ? Empty(MNT_DTYPE_BF16, {n}) : none;
    p.workb = working ? Empty(MNT_DTYPE_BF16, {n}) : none;
    p.counter_a = UploadI32({0}, {1});
    p.counter_b = UploadI32({0}, {1});
    return p;
  }
  void ExpectSameBits(const Param& p) {
    EXPECT_EQ(Bytes(p.wa), Bytes(p.wb));
    EXPECT_EQ(Bytes(p.s1a), Bytes(p.s1b));
    EXPECT_EQ(Bytes(p.s2a), Bytes(p.s2b));
    if (p.worka.data != nullptr) {
      EXPECT_EQ(Bytes(p.worka), Bytes(p.workb));
    }
    EXPECT_EQ(Bytes(p.counter_a), Bytes(p.counter_b));
  }
};

TEST_F(MultiTensorOptimizersTest, AdamWSameBitsAsSingleTensorOps) {
  for (bool counters : {false, true}) {
    SCOPED_TRACE(counters ? "device step counters" : "host step");
    std::vector<Param> params;
    for (size_t i = 0; i < kSizes.size(); ++i) params.push_back(MakeParam(kSizes[i], i != 1));
    const float lr = 3e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
    MNT_Tensor mult = Upload({0.625}, MNT_DTYPE_F32, {1});
    int64_t applied = 0;
    for (int step = 0; step < kSteps; ++step) {
      const bool skip = step == 2;
      MNT_Tensor found = Upload({skip ? 1.0 : 0.0}, MNT_DTYPE_F32, {1});
      std::vector<MNT_Tensor> in{found, mult}, out;
      std::vector<MNT_Tensor> grads;
      for (size_t i = 0; i < params.size(); ++i) {
        const Param& p = params[i];
        grads.push_back(Upload(Random(p.n), kGradDTypes[i], {p.n}));
        in.push_back(grads.back());
        in.push_back(counters ? p.counter_a : sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
        for (const MNT_Tensor& t : {p.wa, p.s1a, p.s2a, p.worka}) out.push_back(t);
      }
      const MNT_MultiAdamWParams mp{MNT_MultiAdamWParams_STRUCT_SIZE, lr, b1, b2, eps, 0.5f,
                                    applied + 1, (int64_t)params.size(),
                                    kLrScales.data(), kWeightDecays.data()};
      const sdk::Status s = Run(MNT_OP_MULTI_ADAMW_STEP, in, out, &mp);
      ASSERT_TRUE(s.ok()) << s.message();
      for (size_t i = 0; i < params.size(); ++i) {
        const Param& p = params[i];
        const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE, lr * kLrScales[i], b1, b2, eps,
                                 kWeightDecays[i], applied + 1};
        std::vector<MNT_Tensor> sin{grads[i], found, mult};
        if (counters) sin.push_back(p.counter_b);
        ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, sin, {p.wb, p.s1b, p.s2b, p.workb}, &ap).ok());
      }
      if (!skip) ++applied;
      for (const Param& p : params) ExpectSameBits(p);
    }
    if (counters) {
      for (const Param& p : params) EXPECT_EQ(Download(p.counter_a), std::vector<double>{3.0});
    }
  }
}

TEST_F(MultiTensorOptimizersTest, AdamWMatchesFloat64Torch) {
  const int64_t n = 257;
  const double lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const float scale = 0.5f, wd = 0.1f;
  const double lr_i = static_cast<float>(static_cast<float>(lr) * scale);
  std::vector<double> w = Stored(Random(n), MNT_DTYPE_F32), m(n, 0.0), v(n, 0.0);
  MNT_Tensor tw = Upload(w, MNT_DTYPE_F32, {n}), tm = Upload(m, MNT_DTYPE_F32, {n}),
             tv = Upload(v, MNT_DTYPE_F32, {n});
  MNT_Tensor counter = UploadI32({0}, {1});
  const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  for (int step = 1; step <= kSteps; ++step) {
    const std::vector<double> g = Stored(Random(n), MNT_DTYPE_F32);
    const MNT_MultiAdamWParams p{MNT_MultiAdamWParams_STRUCT_SIZE, (float)lr, (float)b1,
                                 (float)b2, (float)eps, 0.0f, 1, 1, &scale, &wd};
    ASSERT_TRUE(Run(MNT_OP_MULTI_ADAMW_STEP, {none, none, Upload(g, MNT_DTYPE_F32, {n}), counter},
                    {tw, tm, tv, sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {n})}, &p).ok());
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    for (int64_t i = 0; i < n; ++i) {
      w[i] *= 1 - lr_i * double{wd};
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr_i * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps);
    }
  }
  EXPECT_TRUE(AllCloseRelative(Download(tw), w, 1e-5));
  EXPECT_TRUE(AllCloseRelative(Download(tm), m, 1e-5, 1e-2));
  EXPECT_TRUE(AllCloseRelative(Download(tv), v, 1e-5, 1e-3));
}

TEST_F(MultiTensorOptimizersTest, SgdSameBitsAsSingleTensorOps) {
  for (float momentum : {0.0f, 0.9f}) {
    for (bool nesterov : {false, true}) {
      if (momentum == 0.0f && nesterov) continue;
      SCOPED_TRACE(::testing::Message() << "momentum " << momentum << " nesterov " << nesterov);
      std::vector<Param> params;
      for (size_t i = 0; i < kSizes.size(); ++i) params.push_back(MakeParam(kSizes[i], i != 0));
      MNT_Tensor mult = Upload({1.5}, MNT_DTYPE_F32, {1});
      const MNT_Tensor no_state = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
      for (int step = 0; step < kSteps; ++step) {
        MNT_Tensor found = Upload({step == 1 ? 1.0 : 0.0}, MNT_DTYPE_F32, {1});
        std::vector<MNT_Tensor> in{found, mult}, out, grads;
        for (size_t i = 0; i < params.size(); ++i) {
          const Param& p = params[i];
          grads.push_back(Upload(Random(p.n), kGradDTypes[i], {p.n}));
          in.push_back(grads.back());
          for (const MNT_Tensor& t : {p.wa, momentum != 0.0f ? p.s1a : no_state, p.worka}) {
            out.push_back(t);
          }
        }
        const MNT_MultiSgdParams mp{MNT_MultiSgdParams_STRUCT_SIZE, 0.05f, momentum, 0.5f,
                                    nesterov ? 1 : 0, (int64_t)params.size(),
                                    kLrScales.data(), kWeightDecays.data()};
        const sdk::Status s = Run(MNT_OP_MULTI_SGD_STEP, in, out, &mp);
        ASSERT_TRUE(s.ok()) << s.message();
        for (size_t i = 0; i < params.size(); ++i) {
          const Param& p = params[i];
          const MNT_SgdParams sp{MNT_SgdParams_STRUCT_SIZE, 0.05f * kLrScales[i], momentum,
                                 kWeightDecays[i], nesterov ? 1 : 0};
          ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {grads[i], found, mult},
                          {p.wb, momentum != 0.0f ? p.s1b : no_state, p.workb}, &sp).ok());
        }
        for (const Param& p : params) ExpectSameBits(p);
      }
    }
  }
}

TEST_F(MultiTensorOptimizersTest, TableErrorsAreOneLine) {
  MNT_Tensor w = Upload(Random(5), MNT_DTYPE_F32, {5});
  MNT_Tensor g = Upload(Random(5), MNT_DTYPE_F32, {5});
  MNT_Tensor c = UploadI32({0}, {1});
  const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  MNT_MultiAdamWParams p{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f,
                         0.0f, 1, 2, nullptr, nullptr};
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW_STEP, {none, none, g, c}, {w, w, w, none}, &p).message(),
            "MULTI_ADAMW_STEP: got 4 inputs, expected 6");
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW_STEP, {none, none, g, c, g, none},
                {w, w, w, none, w, w, w, none}, &p).message(),
            "MULTI_ADAMW_STEP: in[5] step_counter is missing, but step counters are given "
            "for every tensor or for none");
  p.num_tensors = 0;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW_STEP, {none, none}, {}, &p).message(),
            "MULTI_ADAMW_STEP: num_tensors 0 must be 1..16777216");
  MNT_MultiSgdParams s{MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 0, 1, nullptr, nullptr};
  EXPECT_EQ(Run(MNT_OP_MULTI_SGD_STEP, {none, none, g}, {w, none, none}, &s).message(),
            "MULTI_SGD_STEP: out[1] momentum is missing but momentum is 0.9");
}

}  // namespace
}  // namespace mnt::cpu

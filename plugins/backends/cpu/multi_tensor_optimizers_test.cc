// MULTI_ADAMW_STEP and MULTI_SGD_STEP (ABI 1.6): the same bits as one
// ADAMW_STEP / SGD_STEP per tensor (per-tensor lr scale, weight decay,
// gradient dtype, working copy, step counters, found_inf skips), and the
// multi AdamW also against a float64 re-implementation of torch.optim.AdamW
// (1e-5 relative). ABI 1.7: all four ops with the learning rate as a device
// scalar give the same bits as with it in the params.
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
            "MULTI_ADAMW_STEP: got 4 inputs, expected 6 to 7");
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

// ABI 1.7: the device learning rate (SGD_STEP in[3], ADAMW_STEP in[4], the
// multi ops' last input) replaces params->lr with the same bits. Path `a`
// gets a new lr in its params each step (as before 1.7); path `b` gets the
// same params every step (lr 7, which must be ignored) and the lr on the
// device.
TEST_F(MultiTensorOptimizersTest, DeviceLrSameBitsAsParamsLr) {
  for (MNT_Op op : {MNT_OP_SGD_STEP, MNT_OP_ADAMW_STEP, MNT_OP_MULTI_SGD_STEP,
                    MNT_OP_MULTI_ADAMW_STEP}) {
    for (bool counters : {false, true}) {
      const bool adam = op == MNT_OP_ADAMW_STEP || op == MNT_OP_MULTI_ADAMW_STEP;
      const bool multi = op == MNT_OP_MULTI_SGD_STEP || op == MNT_OP_MULTI_ADAMW_STEP;
      if (counters && !adam) continue;
      SCOPED_TRACE(::testing::Message() << sdk::OpName(op) << (counters ? " counters" : ""));
      std::vector<Param> params;
      const size_t count = multi ? kSizes.size() : 1;
      for (size_t i = 0; i < count; ++i) params.push_back(MakeParam(kSizes[i], i != 1));
      MNT_Tensor mult = Upload({0.625}, MNT_DTYPE_F32, {1});
      const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
      const MNT_Tensor no_counter = sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1});
      const std::vector<uint8_t> initial = Bytes(params[0].wa);
      for (int step = 0; step < kSteps; ++step) {
        // A scheduled lr: a new, non-round value every step.
        const float lr = static_cast<float>(Random(1, 1e-4, 1e-2)[0]);
        const MNT_Tensor device_lr = Upload({lr}, MNT_DTYPE_F32, {1});
        auto run = [&](bool on_device) {
          const float params_lr = on_device ? 7.0f : lr;
          std::vector<MNT_Tensor> in, out;
          if (multi) in = {none, mult};
          for (size_t i = 0; i < params.size(); ++i) {
            const Param& p = params[i];
            const MNT_Tensor grad = Upload(Stored(Random(p.n), MNT_DTYPE_F32), kGradDTypes[i],
                                           {p.n});
            const MNT_Tensor counter = counters ? (on_device ? p.counter_b : p.counter_a)
                                                : no_counter;
            if (multi) {
              in.push_back(grad);
              if (adam) in.push_back(counter);
            } else {
              in = {grad, none, mult};
              if (adam) in.push_back(counter);
            }
            const std::vector<MNT_Tensor> mine =
                on_device ? std::vector<MNT_Tensor>{p.wb, p.s1b, p.s2b, p.workb}
                          : std::vector<MNT_Tensor>{p.wa, p.s1a, p.s2a, p.worka};
            out.push_back(mine[0]);
            out.push_back(mine[1]);
            if (adam) out.push_back(mine[2]);
            out.push_back(mine[3]);
          }
          if (on_device) in.push_back(device_lr);
          const int64_t n = static_cast<int64_t>(params.size());
          const MNT_SgdParams sgd{MNT_SgdParams_STRUCT_SIZE, params_lr, 0.9f, 0.01f, 1};
          const MNT_AdamWParams adamw{MNT_AdamWParams_STRUCT_SIZE, params_lr, 0.9f, 0.95f,
                                      1e-8f, 0.1f, step + 1};
          const MNT_MultiSgdParams msgd{MNT_MultiSgdParams_STRUCT_SIZE, params_lr, 0.9f, 0.0f, 1,
                                        n, kLrScales.data(), kWeightDecays.data()};
          const MNT_MultiAdamWParams madamw{MNT_MultiAdamWParams_STRUCT_SIZE, params_lr, 0.9f,
                                            0.95f, 1e-8f, 0.0f, step + 1, n, kLrScales.data(),
                                            kWeightDecays.data()};
          const void* p = op == MNT_OP_SGD_STEP     ? static_cast<const void*>(&sgd)
                          : op == MNT_OP_ADAMW_STEP ? static_cast<const void*>(&adamw)
                          : op == MNT_OP_MULTI_SGD_STEP ? static_cast<const void*>(&msgd)
                                                        : static_cast<const void*>(&madamw);
          return Run(op, in, out, p);
        };
        // The same gradients for both: the same seed state.
        const std::mt19937 saved = rng();
        const sdk::Status a = run(false);
        ASSERT_TRUE(a.ok()) << a.message();
        rng() = saved;
        const sdk::Status b = run(true);
        ASSERT_TRUE(b.ok()) << b.message();
        for (const Param& p : params) ExpectSameBits(p);
      }
      // And the lr mattered: the weights moved.
      EXPECT_NE(Bytes(params[0].wa), initial);
    }
  }
}

TEST_F(MultiTensorOptimizersTest, DeviceLrMustBeAnF32Scalar) {
  MNT_Tensor w = Upload(Random(5), MNT_DTYPE_F32, {5});
  MNT_Tensor g = Upload(Random(5), MNT_DTYPE_F32, {5});
  MNT_Tensor lr2 = Upload({0.1, 0.2}, MNT_DTYPE_F32, {2});
  const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  const MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.0f, 0.0f, 0};
  EXPECT_EQ(Run(MNT_OP_SGD_STEP, {g, none, none, lr2}, {w}, &s).message(),
            "SGD_STEP: in[3] lr is f32[2], expected f32[1]");
  EXPECT_EQ(Run(MNT_OP_SGD_STEP, {g, none, none, none, none}, {w}, &s).message(),
            "SGD_STEP: got 5 inputs, expected 1 to 4");
  const MNT_MultiSgdParams ms{MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.0f, 0.0f, 0, 1,
                              nullptr, nullptr};
  EXPECT_EQ(Run(MNT_OP_MULTI_SGD_STEP, {none, none, g, lr2}, {w, none, none}, &ms).message(),
            "MULTI_SGD_STEP: in[3] lr is f32[2], expected f32[1]");
}

}  // namespace
}  // namespace mnt::cpu

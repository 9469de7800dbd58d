// ABI 1.14's multi-tensor forms of the memory-light optimizers on the CPU
// backend: MULTI_ADAMW8BIT_STEP writes the same bits as one ADAMW8BIT_STEP
// per tensor, over several steps from random 8-bit states (fresh inputs
// each run: the fixture's seed is printed), with per-tensor lr scales and
// weight decays, every gradient dtype, working copies present and absent,
// the multiplier, a found_inf step that changes no byte, and the step
// counters, device lr and stochastically rounded pieces (rounding_tensors,
// rounding_elements on block boundaries) together; MULTI_ADAFACTOR_STEP
// likewise against one ADAFACTOR_STEP per tensor (factored matrices, a
// rank-3 tensor and a vector; with and without the first moment, parameter
// scaling, the step counters, the device lr and stochastic rounding with
// rounding_tensors); and the contract's refusals.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::BackendFixture;

constexpr int kSteps = 4;
constexpr int kSkippedStep = 2;  // found_inf is 1 on this step
const std::vector<MNT_DType> kGradDTypes = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16};
const std::vector<float> kLrScales = {1.0f, 0.5f, 3.0f};
const std::vector<float> kWeightDecays = {0.1f, 0.0f, 0.01f};

class MultiTensorLightOptimizersTest : public BackendFixture {
 protected:
  // One tensor's ADAMW8BIT_STEP state, twice: `a` stepped by the multi op,
  // `b` by the single-tensor op.
  struct State8bit {
    int64_t n = 0;
    MNT_Tensor a[6], b[6];  // master, m codes, m absmax, v codes, v absmax, working
    MNT_Tensor counter_a, counter_b;
  };

  std::vector<uint8_t> RandomCodes(int64_t n) {
    std::vector<uint8_t> c(n);
    for (uint8_t& x : c) x = static_cast<uint8_t>(rng()() & 0xff);
    return c;
  }

  // Random codes and absmax (moments anywhere in the maps), random weights;
  // `working`: the working copy's dtype, INVALID for none.
  State8bit Make8bit(int64_t n, MNT_DType working, int32_t counter) {
    State8bit s;
    s.n = n;
    const int64_t blocks = QuantizationBlocks(n);
    const std::vector<double> w = Random(n);
    const std::vector<uint8_t> mc = RandomCodes(n), vc = RandomCodes(n);
    const std::vector<double> ma = Random(blocks, 0.01, 0.1), va = Random(blocks, 1e-4, 1e-2);
    for (MNT_Tensor* t : {s.a, s.b}) {
      t[0] = Upload(w, MNT_DTYPE_F32, {n});
      t[1] = UploadBytes(mc, MNT_DTYPE_U8, {n});
      t[2] = Upload(ma, MNT_DTYPE_F32, {blocks});
      t[3] = UploadBytes(vc, MNT_DTYPE_U8, {n});
      t[4] = Upload(va, MNT_DTYPE_F32, {blocks});
      t[5] = working == MNT_DTYPE_INVALID ? sdk::MakeTensor(nullptr, MNT_DTYPE_BF16, {n})
                                          : Empty(working, {n});
    }
    s.counter_a = UploadI32({counter}, {1});
    s.counter_b = UploadI32({counter}, {1});
    return s;
  }

  void ExpectSameBits(const State8bit& s, const std::string& where) {
    static const char* kNames[] = {"master", "m codes", "m absmax", "v codes", "v absmax",
                                   "working"};
    for (int k = 0; k < 6; ++k) {
      if (s.a[k].data == nullptr) continue;
      EXPECT_EQ(Bytes(s.a[k]), Bytes(s.b[k])) << where << ": " << kNames[k];
    }
    EXPECT_EQ(Bytes(s.counter_a), Bytes(s.counter_b)) << where << ": step counter";
  }

  int64_t RandomSize(int64_t lo, int64_t span) {
    return lo + static_cast<int64_t>(rng()() % static_cast<uint64_t>(span));
  }
};

// What varies between the two runs of the 8-bit comparison.
struct Variant8bit {
  const char* name;
  bool counters, device_lr, stochastic;
};

TEST_F(MultiTensorLightOptimizersTest, AdamW8bitSameBitsAsSingleTensorOps) {
  for (const Variant8bit& v :
       {Variant8bit{"host step and lr, round to nearest", false, false, false},
        Variant8bit{"step counters, device lr, stochastic pieces", true, true, true}}) {
    SCOPED_TRACE(v.name);
    // One partial block, several blocks with a partial last one, and one
    // past the CPU's threading chunk (several chunks of 1024).
    const std::vector<int64_t> sizes = {RandomSize(1, 255), RandomSize(3 * 256 + 1, 255),
                                        RandomSize(5000, 3000)};
    // Stochastic rounding writes bf16 copies only; else every kind.
    const std::vector<MNT_DType> working =
        v.stochastic ? std::vector<MNT_DType>{MNT_DTYPE_BF16, MNT_DTYPE_BF16, MNT_DTYPE_BF16}
                     : std::vector<MNT_DType>{MNT_DTYPE_BF16, MNT_DTYPE_INVALID, MNT_DTYPE_F16};
    // Pieces of parameters 3, 7 and 1 (not consecutive), starting on block
    // boundaries of theirs.
    const std::vector<int64_t> rounding_tensors = {3, 7, 1}, rounding_elements = {0, 512, 256};
    std::vector<State8bit> states;
    for (size_t i = 0; i < sizes.size(); ++i) {
      states.push_back(Make8bit(sizes[i], working[i], /*counter=*/static_cast<int32_t>(i) + 4));
    }
    const float lr = 2e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
    const uint64_t seed = rng()();
    MNT_Tensor mult = Upload({0.625}, MNT_DTYPE_F32, {1});
    MNT_Tensor device_lr = Upload({lr}, MNT_DTYPE_F32, {1});
    int64_t applied = 0;
    for (int step = 0; step < kSteps; ++step) {
      const bool skip = step == kSkippedStep;
      MNT_Tensor found = Upload({skip ? 1.0 : 0.0}, MNT_DTYPE_F32, {1});
      std::vector<MNT_Tensor> in{found, mult}, out, grads;
      for (size_t i = 0; i < states.size(); ++i) {
        const State8bit& s = states[i];
        grads.push_back(Upload(Random(s.n), kGradDTypes[i], {s.n}));
        in.push_back(grads.back());
        in.push_back(v.counters ? s.counter_a : sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
        for (const MNT_Tensor& t : s.a) out.push_back(t);
      }
      if (v.device_lr) in.push_back(device_lr);
      const MNT_MultiAdamWParams mp{
          MNT_MultiAdamWParams_STRUCT_SIZE,
          v.device_lr ? 99.0f : lr,  // ignored with the device lr
          b1, b2, eps, 0.5f /* overridden per tensor */, applied + 1,
          static_cast<int64_t>(states.size()), kLrScales.data(), kWeightDecays.data(),
          v.stochastic ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN, seed, 0,
          v.stochastic ? rounding_tensors.data() : nullptr,
          v.stochastic ? rounding_elements.data() : nullptr};
      const sdk::Status s = Run(MNT_OP_MULTI_ADAMW8BIT_STEP, in, out, &mp);
      ASSERT_TRUE(s.ok()) << s.message();
      for (size_t i = 0; i < states.size(); ++i) {
        const State8bit& st = states[i];
        const float lr_i = lr * kLrScales[i];  // the op's fp32 product
        const MNT_AdamWParams ap{MNT_AdamWParams_STRUCT_SIZE,
                                 v.device_lr ? 99.0f : lr_i,
                                 b1,
                                 b2,
                                 eps,
                                 kWeightDecays[i],
                                 applied + 1,
                                 mp.rounding,
                                 seed,
                                 v.stochastic ? rounding_tensors[i] : static_cast<int64_t>(i),
                                 v.stochastic ? rounding_elements[i] : 0};
        std::vector<MNT_Tensor> sin{grads[i], found, mult};
        if (v.counters || v.device_lr) {
          sin.push_back(v.counters ? st.counter_b : sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
        }
        if (v.device_lr) sin.push_back(Upload({lr_i}, MNT_DTYPE_F32, {1}));
        std::vector<MNT_Tensor> sout(st.b, st.b + 6);
        const sdk::Status single = Run(MNT_OP_ADAMW8BIT_STEP, sin, sout, &ap);
        ASSERT_TRUE(single.ok()) << single.message();
      }
      if (!skip) ++applied;
      for (size_t i = 0; i < states.size(); ++i) {
        ExpectSameBits(states[i], "step " + std::to_string(step) + ", tensor " +
                                      std::to_string(i));
      }
    }
    if (v.counters) {
      for (size_t i = 0; i < states.size(); ++i) {
        EXPECT_EQ(Download(states[i].counter_a)[0], static_cast<double>(i + 4 + kSteps - 1));
      }
    }
  }
}

TEST_F(MultiTensorLightOptimizersTest, AdamW8bitRefusals) {
  const int64_t n = 300;
  const State8bit s = Make8bit(n, MNT_DTYPE_BF16, 0);
  const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  const MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  const MNT_Tensor c = UploadI32({0}, {1});
  std::vector<MNT_Tensor> out(s.a, s.a + 6);
  MNT_MultiAdamWParams p{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                         1, 1};
  EXPECT_TRUE(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g, none}, out, &p).ok());
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g}, out, &p).message(),
            "MULTI_ADAMW8BIT_STEP: got 3 inputs, expected 4 to 5");
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g, none},
                {s.a[0], s.a[1], s.a[2], s.a[3]}, &p)
                .message(),
            "MULTI_ADAMW8BIT_STEP: got 4 outputs, expected 6");
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g, none},
                {s.a[0], s.a[1], s.a[0], s.a[3], s.a[4], s.a[5]}, &p)
                .message(),
            "MULTI_ADAMW8BIT_STEP: out[2] m_absmax is f32[300], expected f32 with 2 elements, "
            "one per 256-element block of in[0] grad");
  p.num_tensors = 2;
  std::vector<MNT_Tensor> two = out;
  two.insert(two.end(), s.b, s.b + 6);
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g, c, g, none}, two, &p).message(),
            "MULTI_ADAMW8BIT_STEP: in[5] step_counter is missing, but step counters are given "
            "for every tensor or for none");
  p.num_tensors = 1;
  p.struct_size = MNT_MultiAdamWParams_STRUCT_SIZE_1_10;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g, none}, out, &p).message(),
            "MULTI_ADAMW8BIT_STEP: MNT_MultiAdamWParams.struct_size 88 is smaller than 104");
  p.struct_size = MNT_MultiAdamWParams_STRUCT_SIZE;
  p.step = 0;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW8BIT_STEP, {none, none, g, none}, out, &p).message(),
            "MULTI_ADAMW8BIT_STEP: step 0 must be >= 1 (1-based)");
}

// ---- MULTI_ADAFACTOR_STEP ---------------------------------------------------

// One tensor's ADAFACTOR_STEP state, twice (a: the multi op's, b: the
// single op's): master, second moment (rows or full), columns (factored),
// first moment (beta1), working copy; absent ones NULL.
struct StateAdafactor {
  std::vector<int64_t> dims;
  int64_t n = 0;
  MNT_Tensor a[5], b[5];
  MNT_Tensor counter_a, counter_b;
};

// What varies between the runs of the Adafactor comparison.
struct VariantAdafactor {
  const char* name;
  float beta1;
  bool scale_parameter, counters, device_lr, stochastic;
};

TEST_F(MultiTensorLightOptimizersTest, AdafactorSameBitsAsSingleTensorOps) {
  for (const VariantAdafactor& v :
       {VariantAdafactor{"host step and lr, parameter scaling", 0.0f, true, false, false, false},
        VariantAdafactor{"first moment, counters, device lr, stochastic", 0.9f, false, true, true,
                         true}}) {
    SCOPED_TRACE(v.name);
    // A matrix, a vector and a rank-3 tensor, sizes drawn per run.
    const std::vector<std::vector<int64_t>> shapes = {
        {RandomSize(2, 60), RandomSize(2, 300)}, {RandomSize(1, 3000)},
        {RandomSize(2, 3), RandomSize(2, 40), RandomSize(2, 40)}};
    const std::vector<MNT_DType> working =
        v.stochastic ? std::vector<MNT_DType>{MNT_DTYPE_BF16, MNT_DTYPE_BF16, MNT_DTYPE_BF16}
                     : std::vector<MNT_DType>{MNT_DTYPE_BF16, MNT_DTYPE_INVALID, MNT_DTYPE_F16};
    const std::vector<int64_t> rounding_tensors = {4, 0, 9};
    std::vector<StateAdafactor> states;
    for (size_t i = 0; i < shapes.size(); ++i) {
      StateAdafactor st;
      st.dims = shapes[i];
      const FactoredShape s = FactoredShapeOf(st.dims.data(), static_cast<int>(st.dims.size()));
      st.n = s.numel();
      const std::vector<double> w = Random(st.n);
      for (MNT_Tensor* t : {st.a, st.b}) {
        t[0] = Upload(w, MNT_DTYPE_F32, {st.n});
        const int64_t second = s.factored ? s.row_count() : st.n;
        t[1] = Upload(std::vector<double>(second, 0.0), MNT_DTYPE_F32, {second});
        t[2] = s.factored ? Upload(std::vector<double>(s.col_states(), 0.0), MNT_DTYPE_F32,
                                   {s.col_states()})
                          : sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
        t[3] = v.beta1 != 0.0f ? Upload(std::vector<double>(st.n, 0.0), MNT_DTYPE_F32, {st.n})
                               : sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
        t[4] = working[i] == MNT_DTYPE_INVALID ? sdk::MakeTensor(nullptr, MNT_DTYPE_BF16, {1})
                                               : Empty(working[i], {st.n});
      }
      st.counter_a = UploadI32({static_cast<int32_t>(i) + 2}, {1});
      st.counter_b = UploadI32({static_cast<int32_t>(i) + 2}, {1});
      states.push_back(st);
    }
    const float lr = 1e-2f;
    const uint64_t seed = rng()();
    MNT_Tensor mult = Upload({0.75}, MNT_DTYPE_F32, {1});
    MNT_Tensor device_lr = Upload({lr}, MNT_DTYPE_F32, {1});
    int64_t applied = 0;
    for (int step = 0; step < kSteps; ++step) {
      const bool skip = step == kSkippedStep;
      MNT_Tensor found = Upload({skip ? 1.0 : 0.0}, MNT_DTYPE_F32, {1});
      std::vector<MNT_Tensor> in{found, mult}, out, grads;
      for (size_t i = 0; i < states.size(); ++i) {
        const StateAdafactor& st = states[i];
        std::vector<int64_t> dims = st.dims;
        grads.push_back(Upload(Random(st.n), kGradDTypes[i], {st.n}));  // then its dims
        grads.back().rank = static_cast<int32_t>(dims.size());
        for (size_t d = 0; d < dims.size(); ++d) grads.back().dims[d] = dims[d];
        in.push_back(grads.back());
        in.push_back(v.counters ? st.counter_a : sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
        for (const MNT_Tensor& t : st.a) out.push_back(t);
      }
      if (v.device_lr) in.push_back(device_lr);
      MNT_MultiAdafactorParams mp{};
      mp.struct_size = MNT_MultiAdafactorParams_STRUCT_SIZE;
      mp.lr = v.device_lr ? 99.0f : lr;  // ignored with the device lr
      mp.beta1 = v.beta1;
      mp.decay_rate = -0.8f;
      mp.epsilon1 = 1e-30f;
      mp.epsilon2 = 1e-3f;
      mp.clip_threshold = 1.0f;
      mp.weight_decay = 0.5f;  // overridden per tensor
      mp.scale_parameter = v.scale_parameter ? 1 : 0;
      mp.step = applied + 1;
      mp.rounding = v.stochastic ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN;
      mp.rounding_seed = seed;
      mp.rounding_tensor = 0;
      mp.num_tensors = static_cast<int64_t>(states.size());
      mp.lr_scales = kLrScales.data();
      mp.weight_decays = kWeightDecays.data();
      mp.rounding_tensors = v.stochastic ? rounding_tensors.data() : nullptr;
      const sdk::Status s = Run(MNT_OP_MULTI_ADAFACTOR_STEP, in, out, &mp);
      ASSERT_TRUE(s.ok()) << s.message();
      for (size_t i = 0; i < states.size(); ++i) {
        const StateAdafactor& st = states[i];
        const float lr_i = lr * kLrScales[i];  // the op's fp32 product
        const MNT_AdafactorParams ap{MNT_AdafactorParams_STRUCT_SIZE,
                                     v.device_lr ? 99.0f : lr_i,
                                     mp.beta1,
                                     mp.decay_rate,
                                     mp.epsilon1,
                                     mp.epsilon2,
                                     mp.clip_threshold,
                                     kWeightDecays[i],
                                     mp.relative_step,
                                     mp.scale_parameter,
                                     mp.warmup_init,
                                     mp.step,
                                     mp.rounding,
                                     seed,
                                     v.stochastic ? rounding_tensors[i] : static_cast<int64_t>(i)};
        std::vector<MNT_Tensor> sin{grads[i], found, mult};
        if (v.counters || v.device_lr) {
          sin.push_back(v.counters ? st.counter_b : sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
        }
        if (v.device_lr) sin.push_back(Upload({lr_i}, MNT_DTYPE_F32, {1}));
        std::vector<MNT_Tensor> sout(st.b, st.b + 5);
        while (sout.back().data == nullptr) sout.pop_back();
        const sdk::Status single = Run(MNT_OP_ADAFACTOR_STEP, sin, sout, &ap);
        ASSERT_TRUE(single.ok()) << single.message();
      }
      if (!skip) ++applied;
      for (size_t i = 0; i < states.size(); ++i) {
        static const char* kNames[] = {"master", "second moment", "columns", "first moment",
                                       "working"};
        for (int k = 0; k < 5; ++k) {
          if (states[i].a[k].data == nullptr) continue;
          EXPECT_EQ(Bytes(states[i].a[k]), Bytes(states[i].b[k]))
              << "step " << step << ", tensor " << i << ": " << kNames[k];
        }
        EXPECT_EQ(Bytes(states[i].counter_a), Bytes(states[i].counter_b)) << "step counter";
      }
    }
    if (v.counters) {
      for (size_t i = 0; i < states.size(); ++i) {
        EXPECT_EQ(Download(states[i].counter_a)[0], static_cast<double>(i + 2 + kSteps - 1));
      }
    }
  }
}

TEST_F(MultiTensorLightOptimizersTest, AdafactorRefusals) {
  const MNT_Tensor none = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  const MNT_Tensor g2 = Upload(Random(12), MNT_DTYPE_F32, {3, 4});
  const MNT_Tensor w = Upload(Random(12), MNT_DTYPE_F32, {12});
  const MNT_Tensor row = Upload(Random(3, 0.1, 1.0), MNT_DTYPE_F32, {3});
  const MNT_Tensor col = Upload(Random(4, 0.1, 1.0), MNT_DTYPE_F32, {4});
  MNT_MultiAdafactorParams p{};
  p.struct_size = MNT_MultiAdafactorParams_STRUCT_SIZE;
  p.lr = 1e-3f;
  p.decay_rate = -0.8f;
  p.clip_threshold = 1.0f;
  p.step = 1;
  p.num_tensors = 1;
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  EXPECT_TRUE(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none},
                  {w, row, col, absent, absent}, &p)
                  .ok());
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none}, {w, row, col}, &p).message(),
            "MULTI_ADAFACTOR_STEP: got 3 outputs, expected 5");
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none},
                {w, row, absent, absent, absent}, &p)
                .message(),
            "MULTI_ADAFACTOR_STEP: out[2] col_state is missing, but in[2] grad has rank 2 "
            "(factored)");
  p.beta1 = 0.9f;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none},
                {w, row, col, absent, absent}, &p)
                .message(),
            "MULTI_ADAFACTOR_STEP: out[3] first_moment is missing but beta1 is 0.9");
  p.beta1 = 0.0f;
  p.decay_rate = 0.5f;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none},
                {w, row, col, absent, absent}, &p)
                .message(),
            "MULTI_ADAFACTOR_STEP: decay_rate 0.5 must be negative (beta2_t = 1 - t^decay_rate)");
  p.decay_rate = -0.8f;
  p.struct_size = MNT_STRUCT_SIZE(MNT_MultiAdafactorParams, weight_decays);
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none},
                {w, row, col, absent, absent}, &p)
                .message(),
            "MULTI_ADAFACTOR_STEP: MNT_MultiAdafactorParams.struct_size 104 is smaller than 112");
  p.struct_size = MNT_MultiAdafactorParams_STRUCT_SIZE;
  const int64_t bad_tensor = -1;
  p.rounding_tensors = &bad_tensor;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAFACTOR_STEP, {none, none, g2, none},
                {w, row, col, absent, absent}, &p)
                .message(),
            "MULTI_ADAFACTOR_STEP: rounding_tensors[0] -1 must be >= 0");
}

}  // namespace
}  // namespace mnt::cpu

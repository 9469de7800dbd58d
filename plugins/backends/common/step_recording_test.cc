// StepRecording: what a recorded op keeps of its Backend_Run call, and when
// two steps count as the same. Fresh random op sequences (seeded per test),
// params built in buffers whose padding holds different garbage each time.
#include "plugins/backends/common/step_recording.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/sdk/op_list.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {
namespace {

// One Backend_Run call and the storage it borrows.
struct Call {
  MNT_Op op = MNT_OP_INVALID;
  std::vector<MNT_Tensor> in, out;
  std::vector<unsigned char> params;  // empty: NULL
  std::vector<float> lr_scales, weight_decays;
  std::vector<int64_t> rounding_tensors, rounding_elements;  // ABI 1.11

  MNT_Backend_Run_Args Args() const {
    MNT_Backend_Run_Args a{};
    a.struct_size = MNT_Backend_Run_Args_STRUCT_SIZE;
    a.op = op;
    a.inputs = in.data();
    a.num_inputs = in.size();
    a.outputs = out.data();
    a.num_outputs = out.size();
    a.params = params.empty() ? nullptr : params.data();
    return a;
  }
};

// The same random step every time for one seed; `garbage` fills every byte
// of a params struct before its fields are written (the holes keep it).
class StepMaker {
 public:
  explicit StepMaker(uint64_t seed) : seed_(seed) {}

  std::vector<std::unique_ptr<Call>> Make(unsigned char garbage) const {
    std::mt19937_64 rng(seed_);
    std::uniform_int_distribution<int> kind(0, 7), count(1, 5);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    const int n = 20 + static_cast<int>(rng() % 30);
    std::vector<std::unique_ptr<Call>> calls;
    for (int i = 0; i < n; ++i) {
      auto c = std::make_unique<Call>();
      const auto tensor = [&] {
        const int rank = 1 + static_cast<int>(rng() % 3);
        std::vector<int64_t> dims;
        for (int d = 0; d < rank; ++d) dims.push_back(1 + static_cast<int64_t>(rng() % 64));
        void* p = reinterpret_cast<void*>(uintptr_t{0x100000} + 256 * (rng() % 4096));
        return sdk::MakeTensor(p, rng() % 2 ? MNT_DTYPE_F32 : MNT_DTYPE_BF16, rank, dims.data());
      };
      switch (kind(rng)) {
        case 0: {
          c->op = MNT_OP_FILL;
          c->out = {tensor()};
          Put(c.get(), MNT_FillParams{MNT_FillParams_STRUCT_SIZE, value(rng)}, garbage);
          break;
        }
        case 1: {
          c->op = MNT_OP_ADD;
          c->in = {tensor(), tensor()};
          c->out = {tensor()};
          Put(c.get(), MNT_AddParams{MNT_AddParams_STRUCT_SIZE, value(rng), value(rng)},
              garbage);
          break;
        }
        case 2: {
          c->op = MNT_OP_ADAMW_STEP;
          c->in = {tensor(), tensor(), tensor()};
          c->out = {tensor(), tensor(), tensor()};
          MNT_AdamWParams p;
          std::memset(&p, garbage, sizeof(p));
          p.struct_size = MNT_AdamWParams_STRUCT_SIZE;
          p.lr = value(rng);
          p.beta1 = 0.9f;
          p.beta2 = 0.999f;
          p.epsilon = 1e-8f;
          p.weight_decay = value(rng);
          p.step = static_cast<int64_t>(rng() % 1000);
          p.rounding = rng() % 2 ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN;
          p.rounding_seed = rng();
          p.rounding_tensor = static_cast<int64_t>(rng() % 100);
          p.rounding_element = static_cast<int64_t>(rng() % 100000);
          PutRaw(c.get(), p);
          break;
        }
        case 3: {
          c->op = MNT_OP_CROSS_ENTROPY;
          c->in = {tensor(), tensor()};
          c->out = {tensor(), tensor()};
          MNT_CrossEntropyParams p;
          std::memset(&p, garbage, sizeof(p));
          p.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
          p.grad_scale = value(rng);
          p.num_classes = static_cast<int64_t>(rng() % 300);
          PutRaw(c.get(), p);
          break;
        }
        case 4: {
          // 1.14: MULTI_ADAMW8BIT_STEP takes the same params.
          const bool quantized = rng() % 2 != 0;
          c->op = quantized ? MNT_OP_MULTI_ADAMW8BIT_STEP : MNT_OP_MULTI_ADAMW_STEP;
          const int t = count(rng);
          c->in = {tensor(), tensor()};
          for (int k = 0; k < 2 * t; ++k) c->in.push_back(tensor());
          for (int k = 0; k < (quantized ? 6 : 4) * t; ++k) c->out.push_back(tensor());
          for (int k = 0; k < t; ++k) c->lr_scales.push_back(value(rng));
          for (int k = 0; k < t; ++k) c->weight_decays.push_back(value(rng));
          MNT_MultiAdamWParams p;
          std::memset(&p, garbage, sizeof(p));
          p.struct_size = MNT_MultiAdamWParams_STRUCT_SIZE;
          p.lr = value(rng);
          p.beta1 = 0.9f;
          p.beta2 = 0.95f;
          p.epsilon = 1e-8f;
          p.weight_decay = 0.1f;
          p.step = 7;
          p.num_tensors = t;
          p.lr_scales = rng() % 2 ? c->lr_scales.data() : nullptr;
          p.weight_decays = c->weight_decays.data();
          p.rounding = MNT_ROUNDING_NEAREST_EVEN;
          p.rounding_seed = rng();
          p.rounding_tensor = 0;
          // 1.11: pieces' tensor and element indices, borrowed like lr_scales.
          for (int k = 0; k < t; ++k) c->rounding_tensors.push_back(rng() % 50);
          for (int k = 0; k < t; ++k) c->rounding_elements.push_back(rng() % 100000);
          p.rounding_tensors = rng() % 2 ? c->rounding_tensors.data() : nullptr;
          p.rounding_elements = c->rounding_elements.data();
          PutRaw(c.get(), p);
          break;
        }
        case 5: {
          c->op = MNT_OP_MULTI_SGD_STEP;
          const int t = count(rng);
          c->in = {tensor(), tensor()};
          for (int k = 0; k < t; ++k) c->in.push_back(tensor());
          for (int k = 0; k < 3 * t; ++k) c->out.push_back(tensor());
          for (int k = 0; k < t; ++k) c->weight_decays.push_back(value(rng));
          MNT_MultiSgdParams p;
          std::memset(&p, garbage, sizeof(p));
          p.struct_size = MNT_MultiSgdParams_STRUCT_SIZE;
          p.lr = value(rng);
          p.momentum = 0.9f;
          p.weight_decay = 0.0f;
          p.nesterov = 0;
          p.num_tensors = t;
          p.lr_scales = nullptr;
          p.weight_decays = c->weight_decays.data();
          p.rounding = MNT_ROUNDING_STOCHASTIC;
          p.rounding_seed = rng();
          p.rounding_tensor = 0;
          p.rounding_step = static_cast<int64_t>(rng() % 1000);
          for (int k = 0; k < t; ++k) c->rounding_tensors.push_back(rng() % 50);
          for (int k = 0; k < t; ++k) c->rounding_elements.push_back(rng() % 100000);
          p.rounding_tensors = c->rounding_tensors.data();
          p.rounding_elements = rng() % 2 ? c->rounding_elements.data() : nullptr;
          PutRaw(c.get(), p);
          break;
        }
        case 6: {
          // 1.14: Adafactor's hole after its enum, and three arrays.
          c->op = MNT_OP_MULTI_ADAFACTOR_STEP;
          const int t = count(rng);
          c->in = {tensor(), tensor()};
          for (int k = 0; k < 2 * t; ++k) c->in.push_back(tensor());
          for (int k = 0; k < 5 * t; ++k) c->out.push_back(tensor());
          for (int k = 0; k < t; ++k) c->lr_scales.push_back(value(rng));
          for (int k = 0; k < t; ++k) c->weight_decays.push_back(value(rng));
          for (int k = 0; k < t; ++k) c->rounding_tensors.push_back(rng() % 50);
          MNT_MultiAdafactorParams p;
          std::memset(&p, garbage, sizeof(p));
          p.struct_size = MNT_MultiAdafactorParams_STRUCT_SIZE;
          p.lr = value(rng);
          p.beta1 = 0.0f;
          p.decay_rate = -0.8f;
          p.epsilon1 = 1e-30f;
          p.epsilon2 = 1e-3f;
          p.clip_threshold = 1.0f;
          p.weight_decay = 0.0f;
          p.relative_step = 0;
          p.scale_parameter = 1;
          p.warmup_init = 0;
          p.step = static_cast<int64_t>(rng() % 1000);
          p.rounding = MNT_ROUNDING_STOCHASTIC;
          p.rounding_seed = rng();
          p.rounding_tensor = 0;
          p.num_tensors = t;
          p.lr_scales = rng() % 2 ? c->lr_scales.data() : nullptr;
          p.weight_decays = c->weight_decays.data();
          p.rounding_tensors = rng() % 2 ? c->rounding_tensors.data() : nullptr;
          PutRaw(c.get(), p);
          break;
        }
        default: {
          // SOFTMAX reads no params: whatever the pointer, it is not copied.
          c->op = MNT_OP_SOFTMAX;
          c->in = {tensor()};
          c->out = {tensor()};
          c->params.assign(1, garbage);
          break;
        }
      }
      calls.push_back(std::move(c));
    }
    return calls;
  }

 private:
  template <typename P>
  static void Put(Call* c, const P& p, unsigned char garbage) {
    P q;
    std::memset(&q, garbage, sizeof(q));
    q = p;  // member-wise: the padding keeps the garbage or not, either way
    PutRaw(c, q);
  }
  template <typename P>
  static void PutRaw(Call* c, const P& p) {
    c->params.resize(p.struct_size);
    std::memcpy(c->params.data(), &p, p.struct_size);
  }

  uint64_t seed_;
};

StepRecording Record(const std::vector<std::unique_ptr<Call>>& calls) {
  StepRecording r;
  for (const auto& c : calls) EXPECT_TRUE(r.Add(c->Args()).ok()) << sdk::OpName(c->op);
  return r;
}

uint64_t Seed() { return std::random_device{}(); }

TEST(StepRecordingTest, TheSameRandomStepMatchesWhateverThePaddingHolds) {
  for (int trial = 0; trial < 20; ++trial) {
    const StepMaker maker(Seed());
    const StepRecording a = Record(maker.Make(0x00));
    const StepRecording b = Record(maker.Make(0xA5));
    EXPECT_GT(a.size(), 0u);
    EXPECT_EQ(a.Difference(b), "");
    EXPECT_EQ(b.Difference(a), "");
  }
}

TEST(StepRecordingTest, IssuedCallsAreTheOriginalsAfterTheirStorageIsGone) {
  const StepMaker maker(Seed());
  std::vector<std::unique_ptr<Call>> calls = maker.Make(0x3C);
  const std::vector<std::unique_ptr<Call>> kept = maker.Make(0x3C);  // the same calls
  StepRecording r = Record(calls);
  calls.clear();  // everything the calls borrowed is freed
  ASSERT_EQ(r.size(), kept.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const MNT_Backend_Run_Args got = r.op(i).Args(nullptr);
    const MNT_Backend_Run_Args want = kept[i]->Args();
    ASSERT_EQ(got.op, want.op);
    ASSERT_EQ(got.num_inputs, want.num_inputs);
    ASSERT_EQ(got.num_outputs, want.num_outputs);
    for (size_t k = 0; k < want.num_inputs; ++k) {
      EXPECT_EQ(0, std::memcmp(&got.inputs[k], &want.inputs[k], sizeof(MNT_Tensor)));
    }
    for (size_t k = 0; k < want.num_outputs; ++k) {
      EXPECT_EQ(0, std::memcmp(&got.outputs[k], &want.outputs[k], sizeof(MNT_Tensor)));
    }
    if (want.op == MNT_OP_SOFTMAX) {
      EXPECT_EQ(got.params, nullptr);
      continue;
    }
    ASSERT_NE(got.params, nullptr);
    if (want.op == MNT_OP_MULTI_ADAMW_STEP || want.op == MNT_OP_MULTI_ADAMW8BIT_STEP) {
      const auto* g = static_cast<const MNT_MultiAdamWParams*>(got.params);
      const auto* w = static_cast<const MNT_MultiAdamWParams*>(want.params);
      EXPECT_EQ(g->lr, w->lr);
      EXPECT_EQ(g->num_tensors, w->num_tensors);
      ASSERT_EQ(g->lr_scales == nullptr, w->lr_scales == nullptr);
      ASSERT_NE(g->weight_decays, w->weight_decays);  // a copy, not the caller's
      ASSERT_EQ(g->rounding_tensors == nullptr, w->rounding_tensors == nullptr);
      ASSERT_NE(g->rounding_elements, w->rounding_elements);  // a copy
      for (int64_t t = 0; t < w->num_tensors; ++t) {
        if (w->lr_scales) {
          EXPECT_EQ(g->lr_scales[t], w->lr_scales[t]);
        }
        EXPECT_EQ(g->weight_decays[t], w->weight_decays[t]);
        if (w->rounding_tensors) {
          EXPECT_EQ(g->rounding_tensors[t], w->rounding_tensors[t]);
        }
        EXPECT_EQ(g->rounding_elements[t], w->rounding_elements[t]);
      }
    } else if (want.op == MNT_OP_MULTI_ADAFACTOR_STEP) {
      const auto* g = static_cast<const MNT_MultiAdafactorParams*>(got.params);
      const auto* w = static_cast<const MNT_MultiAdafactorParams*>(want.params);
      EXPECT_EQ(g->lr, w->lr);
      EXPECT_EQ(g->step, w->step);
      EXPECT_EQ(g->rounding_seed, w->rounding_seed);
      ASSERT_EQ(g->lr_scales == nullptr, w->lr_scales == nullptr);
      ASSERT_NE(g->weight_decays, w->weight_decays);  // a copy, not the caller's
      ASSERT_EQ(g->rounding_tensors == nullptr, w->rounding_tensors == nullptr);
      for (int64_t t = 0; t < w->num_tensors; ++t) {
        if (w->lr_scales) {
          EXPECT_EQ(g->lr_scales[t], w->lr_scales[t]);
        }
        EXPECT_EQ(g->weight_decays[t], w->weight_decays[t]);
        if (w->rounding_tensors) {
          EXPECT_EQ(g->rounding_tensors[t], w->rounding_tensors[t]);
        }
      }
    } else if (want.op == MNT_OP_MULTI_SGD_STEP) {
      const auto* g = static_cast<const MNT_MultiSgdParams*>(got.params);
      const auto* w = static_cast<const MNT_MultiSgdParams*>(want.params);
      EXPECT_EQ(g->lr, w->lr);
      EXPECT_EQ(g->lr_scales, nullptr);
      ASSERT_NE(g->rounding_tensors, w->rounding_tensors);  // a copy
      ASSERT_EQ(g->rounding_elements == nullptr, w->rounding_elements == nullptr);
      for (int64_t t = 0; t < w->num_tensors; ++t) {
        EXPECT_EQ(g->weight_decays[t], w->weight_decays[t]);
        EXPECT_EQ(g->rounding_tensors[t], w->rounding_tensors[t]);
        if (w->rounding_elements) {
          EXPECT_EQ(g->rounding_elements[t], w->rounding_elements[t]);
        }
      }
    } else {
      size_t size;
      std::memcpy(&size, want.params, sizeof(size));
      EXPECT_EQ(0, std::memcmp(got.params, want.params, size)) << sdk::OpName(want.op);
    }
  }
}

// Index of the first op of `kind` in the step, or -1.
int FirstOf(const std::vector<std::unique_ptr<Call>>& calls, MNT_Op kind) {
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i]->op == kind) return static_cast<int>(i);
  }
  return -1;
}

// A step made with `seed` that holds at least one op of each kind listed.
uint64_t SeedWith(std::initializer_list<MNT_Op> kinds) {
  for (;;) {
    const uint64_t seed = Seed();
    const auto calls = StepMaker(seed).Make(0);
    bool all = true;
    for (MNT_Op k : kinds) all = all && FirstOf(calls, k) >= 0;
    if (all) return seed;
  }
}

TEST(StepRecordingTest, AChangedFloatParamIsADifferentStep) {
  const StepMaker maker(SeedWith({MNT_OP_ADAMW_STEP}));
  const StepRecording a = Record(maker.Make(0));
  auto calls = maker.Make(0);
  const int i = FirstOf(calls, MNT_OP_ADAMW_STEP);
  auto* p = reinterpret_cast<MNT_AdamWParams*>(calls[i]->params.data());
  p->lr = std::nextafter(p->lr, 1e9f);  // one ulp: a schedule's next rate
  EXPECT_EQ(Record(calls).Difference(a),
            "op " + std::to_string(i) + " (ADAMW_STEP): params byte " +
                std::to_string(offsetof(MNT_AdamWParams, lr)) + " differs");
}

TEST(StepRecordingTest, AChangedBorrowedArrayIsADifferentStep) {
  const StepMaker maker(SeedWith({MNT_OP_MULTI_SGD_STEP}));
  const StepRecording a = Record(maker.Make(0));
  auto calls = maker.Make(0);
  const int i = FirstOf(calls, MNT_OP_MULTI_SGD_STEP);
  calls[i]->weight_decays.back() += 1.0f;  // same pointer, other contents
  EXPECT_EQ(Record(calls).Difference(a),
            "op " + std::to_string(i) + " (MULTI_SGD_STEP): params array 1 differs");
  // ABI 1.11: a piece's tensor index is compared by contents too.
  calls = maker.Make(0);
  calls[i]->rounding_tensors.front() += 1;
  EXPECT_EQ(Record(calls).Difference(a),
            "op " + std::to_string(i) + " (MULTI_SGD_STEP): params array 2 differs");
}

TEST(StepRecordingTest, AChangedPointerOrShapeIsADifferentStep) {
  const StepMaker maker(SeedWith({MNT_OP_ADD}));
  const StepRecording a = Record(maker.Make(0));
  auto calls = maker.Make(0);
  const int i = FirstOf(calls, MNT_OP_ADD);
  calls[i]->in[1].data = static_cast<char*>(calls[i]->in[1].data) + 256;
  EXPECT_EQ(Record(calls).Difference(a),
            "op " + std::to_string(i) + " (ADD): in[1] pointer differs");

  calls = maker.Make(0);
  calls[i]->out[0].dims[0] += 1;
  EXPECT_EQ(Record(calls).Difference(a),
            "op " + std::to_string(i) + " (ADD): out[0] dims[0] differs");

  calls = maker.Make(0);
  calls[i]->out[0].dtype = calls[i]->out[0].dtype == MNT_DTYPE_F32 ? MNT_DTYPE_BF16
                                                                 : MNT_DTYPE_F32;
  EXPECT_EQ(Record(calls).Difference(a),
            "op " + std::to_string(i) + " (ADD): out[0] dtype differs");
}

TEST(StepRecordingTest, AnExtraOrMissingOpIsADifferentStep) {
  const StepMaker maker(Seed());
  const StepRecording a = Record(maker.Make(0));
  auto calls = maker.Make(0);
  calls.push_back(std::move(maker.Make(0).front()));
  const StepRecording longer = Record(calls);
  EXPECT_EQ(longer.Difference(a),
            std::to_string(a.size() + 1) + " ops instead of " + std::to_string(a.size()));
  EXPECT_EQ(a.Difference(longer),
            std::to_string(a.size()) + " ops instead of " + std::to_string(a.size() + 1));
  EXPECT_EQ(a.Difference(StepRecording()), std::to_string(a.size()) + " ops instead of 0");
}

TEST(StepRecordingTest, ADeviceCopyIsComparedByPointersAndSize) {
  const StepMaker maker(Seed());
  char buffer[512];
  StepRecording a = Record(maker.Make(0)), b = Record(maker.Make(0));
  a.AddDeviceCopy(buffer, buffer + 256, 128);
  b.AddDeviceCopy(buffer, buffer + 256, 128);
  EXPECT_EQ(a.Difference(b), "");
  StepRecording c = Record(maker.Make(0));
  c.AddDeviceCopy(buffer, buffer + 256, 64);
  EXPECT_EQ(c.Difference(a), "op " + std::to_string(a.size() - 1) +
                                 " (device copy): copy size differs");
  StepRecording d = Record(maker.Make(0));
  d.AddDeviceCopy(buffer + 256, buffer, 128);
  EXPECT_EQ(d.Difference(a), "op " + std::to_string(a.size() - 1) +
                                 " (device copy): copy pointer differs");
}

TEST(StepRecordingTest, AnOpWhoseParamsItDoesNotKnowIsRefused) {
  MNT_Backend_Run_Args a{};
  a.struct_size = MNT_Backend_Run_Args_STRUCT_SIZE;
  a.op = static_cast<MNT_Op>(MNT_OP_MULTI_SGD_STEP + 1);  // appended after this file
  StepRecording r;
  const sdk::Status s = r.Add(a);
  EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED);
  EXPECT_EQ(r.size(), 0u);
}

}  // namespace
}  // namespace mnt::backend

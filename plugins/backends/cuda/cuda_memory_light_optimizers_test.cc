// ABI 1.12's ADAMW8BIT_STEP and ADAFACTOR_STEP on the cuda backend against
// the CPU backend, bit for bit (both run the per-element code and the sums'
// fixed order of plugins/backends/common; adamw8bit_math.h,
// adafactor_math.h), over several steps: every gradient dtype, working
// copies rounded to nearest and stochastically, the step counter and the
// device learning rate, found_inf; sizes with partial quantization blocks
// and many CUDA blocks; factored tensors of rank 2 and 3 and an
// unfactored one. ABI 1.14's MULTI_ADAMW8BIT_STEP and MULTI_ADAFACTOR_STEP
// likewise, over tables of mixed storage types. Skips without a GPU.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/adafactor_math.h"
#include "plugins/backends/common/blockwise_quantization.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::Pair;

class CudaMemoryLightOptimizersTest : public testing::DualBackendTest {
 protected:
  void ExpectSameBits(const Pair& p, const char* what) {
    EXPECT_EQ(d_.Bytes(p, true), d_.Bytes(p, false)) << what;
  }
  std::vector<uint8_t> Codes(int64_t n) {
    std::vector<uint8_t> c(n);
    for (uint8_t& x : c) x = static_cast<uint8_t>(rng_() & 0xff);
    return c;
  }
  std::vector<float> Uniform(int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng_);
    return v;
  }
};

TEST_F(CudaMemoryLightOptimizersTest, AdamW8bitMatchesCpuBits) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{300001}}) {
    for (MNT_DType grad_dtype : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
      for (bool device_scalars : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n " << n << " grad " << grad_dtype
                                          << " counter+lr " << device_scalars);
        const int64_t blocks = QuantizationBlocks(n);
        auto master = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
        auto m_codes = d_.UploadRaw(Codes(n), MNT_DTYPE_U8, {n});
        auto m_absmax = d_.Upload(Uniform(blocks, 0.01f, 0.1f), MNT_DTYPE_F32, {blocks});
        auto v_codes = d_.UploadRaw(Codes(n), MNT_DTYPE_U8, {n});
        auto v_absmax = d_.Upload(Uniform(blocks, 1e-4f, 1e-2f), MNT_DTYPE_F32, {blocks});
        auto working = d_.Poisoned(MNT_DTYPE_BF16, {n});
        auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
        auto found = d_.Upload({0.0f}, MNT_DTYPE_F32, {1});
        auto counter = d_.UploadI32({4}, {1});
        auto lr = d_.Upload({1e-3f}, MNT_DTYPE_F32, {1});
        MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 2e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3,
                          device_scalars ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN,
                          0x1234u, 5, 0};
        for (int step = 0; step < 3; ++step) {
          auto grad = d_.Upload(Random(n), grad_dtype, {n});
          std::vector<const Pair*> in{grad.get(), found.get(), mult.get()};
          if (device_scalars) in.insert(in.end(), {counter.get(), lr.get()});
          ASSERT_TRUE(d_.RunBoth(MNT_OP_ADAMW8BIT_STEP, in,
                                 {master.get(), m_codes.get(), m_absmax.get(), v_codes.get(),
                                  v_absmax.get(), working.get()},
                                 &p)
                          .ok());
          ++p.step;
        }
        for (const Pair* t : {master.get(), m_codes.get(), m_absmax.get(), v_codes.get(),
                              v_absmax.get(), working.get(), counter.get()}) {
          ExpectSameBits(*t, "adamw8bit");
        }
        // An overflow step changes nothing on the device.
        const std::vector<uint8_t> before = d_.Bytes(*master, true);
        auto inf = d_.Upload({1.0f}, MNT_DTYPE_F32, {1});
        auto grad = d_.Upload(Random(n), grad_dtype, {n});
        ASSERT_TRUE(d_.RunBoth(MNT_OP_ADAMW8BIT_STEP, {grad.get(), inf.get()},
                               {master.get(), m_codes.get(), m_absmax.get(), v_codes.get(),
                                v_absmax.get()},
                               &p)
                        .ok());
        EXPECT_EQ(d_.Bytes(*master, true), before);
      }
    }
  }
}

// ABI 1.14: MULTI_ADAMW8BIT_STEP over a table whose tensors span several
// storage pairs (one launch each) and share one (the prefix lookup within a
// launch), against the CPU backend's multi op (which is one ADAMW8BIT_STEP
// per tensor, bit for bit: plugins/backends/cpu/
// multi_tensor_light_optimizers_test), with lr scales and weight decays,
// then with step counters, the device lr and stochastically rounded pieces;
// a found_inf step in between changes no byte on either backend.
TEST_F(CudaMemoryLightOptimizersTest, MultiAdamW8bitMatchesCpuBits) {
  const std::vector<int64_t> sizes = {1, 1000, 300001, 700};
  const std::vector<MNT_DType> grads = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16,
                                        MNT_DTYPE_BF16};
  const std::vector<float> lr_scales = {1.0f, 0.5f, 3.0f, 1.0f};
  const std::vector<float> weight_decays = {0.1f, 0.0f, 0.01f, 0.05f};
  const std::vector<int64_t> rounding_tensors = {3, 7, 1, 0};
  const std::vector<int64_t> rounding_elements = {0, 512, 256, 1024};
  for (bool device_scalars : {false, true}) {
    SCOPED_TRACE(device_scalars ? "counters, device lr, stochastic pieces" : "host step and lr");
    std::vector<std::unique_ptr<Pair>> state, counters;
    std::vector<const Pair*> out;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const int64_t n = sizes[i], blocks = QuantizationBlocks(n);
      state.push_back(d_.Upload(Random(n), MNT_DTYPE_F32, {n}));
      state.push_back(d_.UploadRaw(Codes(n), MNT_DTYPE_U8, {n}));
      state.push_back(d_.Upload(Uniform(blocks, 0.01f, 0.1f), MNT_DTYPE_F32, {blocks}));
      state.push_back(d_.UploadRaw(Codes(n), MNT_DTYPE_U8, {n}));
      state.push_back(d_.Upload(Uniform(blocks, 1e-4f, 1e-2f), MNT_DTYPE_F32, {blocks}));
      // Rounded to nearest: bf16, none, f16, bf16; stochastically: bf16.
      const bool none = !device_scalars && i == 1;
      state.push_back(none ? nullptr
                           : d_.Poisoned(device_scalars || i != 2 ? MNT_DTYPE_BF16
                                                                  : MNT_DTYPE_F16,
                                         {n}));
      counters.push_back(d_.UploadI32({static_cast<int32_t>(3 + i)}, {1}));
    }
    for (const auto& t : state) out.push_back(t.get());
    auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
    auto lr = d_.Upload({1e-3f}, MNT_DTYPE_F32, {1});
    MNT_MultiAdamWParams p{MNT_MultiAdamWParams_STRUCT_SIZE, 2e-3f, 0.9f, 0.999f, 1e-8f, 0.5f,
                           3, static_cast<int64_t>(sizes.size()), lr_scales.data(),
                           weight_decays.data(),
                           device_scalars ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN,
                           0x1234u, 0, device_scalars ? rounding_tensors.data() : nullptr,
                           device_scalars ? rounding_elements.data() : nullptr};
    for (int step = 0; step < 4; ++step) {
      auto found = d_.Upload({step == 2 ? 1.0f : 0.0f}, MNT_DTYPE_F32, {1});
      std::vector<std::unique_ptr<Pair>> grad_pairs;
      std::vector<const Pair*> in{found.get(), mult.get()};
      for (size_t i = 0; i < sizes.size(); ++i) {
        grad_pairs.push_back(d_.Upload(Random(sizes[i]), grads[i], {sizes[i]}));
        in.push_back(grad_pairs.back().get());
        in.push_back(device_scalars ? counters[i].get() : nullptr);
      }
      if (device_scalars) in.push_back(lr.get());
      const std::vector<uint8_t> before = d_.Bytes(*state[12], true);
      ASSERT_TRUE(d_.RunBoth(MNT_OP_MULTI_ADAMW8BIT_STEP, in, out, &p).ok());
      if (step == 2) {
        EXPECT_EQ(d_.Bytes(*state[12], true), before) << "found_inf changed a master";
      } else {
        ++p.step;
      }
    }
    for (const auto& t : state) {
      if (t != nullptr) ExpectSameBits(*t, "multi adamw8bit");
    }
    for (const auto& c : counters) ExpectSameBits(*c, "multi adamw8bit step counter");
  }
}

TEST_F(CudaMemoryLightOptimizersTest, AdafactorMatchesCpuBits) {
  const std::vector<std::vector<int64_t>> shapes = {{70001}, {37, 129}, {4, 300, 257}, {1, 1}};
  int variant = 0;
  for (const std::vector<int64_t>& dims : shapes) {
    for (MNT_DType grad_dtype : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
      ++variant;
      const FactoredShape s = FactoredShapeOf(dims.data(), static_cast<int>(dims.size()));
      const int64_t n = s.numel();
      MNT_AdafactorParams p{};
      p.struct_size = MNT_AdafactorParams_STRUCT_SIZE;
      p.lr = 1e-2f;
      p.beta1 = variant % 2 ? 0.9f : 0.0f;
      p.decay_rate = -0.8f;
      p.epsilon1 = 1e-30f;
      p.epsilon2 = 1e-3f;
      p.clip_threshold = 1.0f;
      p.weight_decay = variant % 3 == 0 ? 0.01f : 0.0f;
      p.relative_step = variant % 4 == 0;
      p.scale_parameter = variant % 2;
      p.step = 1;
      p.rounding = variant % 5 == 0 ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN;
      p.rounding_seed = 99;
      p.rounding_tensor = 2;
      const bool device_scalars = variant % 2 == 0;
      SCOPED_TRACE(::testing::Message() << "rank " << dims.size() << " grad " << grad_dtype
                                        << " variant " << variant);
      auto master = d_.Upload(Random(n), MNT_DTYPE_F32, dims);
      const int64_t second_n = s.factored ? s.row_count() : n;
      auto second = d_.Upload(std::vector<float>(second_n, 0.0f), MNT_DTYPE_F32, {second_n});
      auto col = s.factored ? d_.Upload(std::vector<float>(s.col_states(), 0.0f), MNT_DTYPE_F32,
                                        {s.col_states()})
                            : nullptr;
      auto m = p.beta1 != 0.0f ? d_.Upload(std::vector<float>(n, 0.0f), MNT_DTYPE_F32, {n})
                               : nullptr;
      auto working = d_.Poisoned(MNT_DTYPE_BF16, {n});
      auto mult = d_.Upload({0.75f}, MNT_DTYPE_F32, {1});
      auto counter = d_.UploadI32({0}, {1});
      auto lr = d_.Upload({3e-3f}, MNT_DTYPE_F32, {1});
      for (int step = 0; step < 4; ++step) {
        auto grad = d_.Upload(Random(n, 0.1f), grad_dtype, dims);
        std::vector<const Pair*> in{grad.get(), nullptr, mult.get()};
        if (device_scalars) in.insert(in.end(), {counter.get(), lr.get()});
        ASSERT_TRUE(d_.RunBoth(MNT_OP_ADAFACTOR_STEP, in,
                               {master.get(), second.get(), col.get(), m.get(), working.get()},
                               &p)
                        .ok());
        ++p.step;
      }
      for (const Pair* t : {master.get(), second.get(), col.get(), m.get(), working.get(),
                            counter.get()}) {
        if (t != nullptr) ExpectSameBits(*t, "adafactor");
      }
    }
  }
}

// ABI 1.14: MULTI_ADAFACTOR_STEP over a table of a vector, a matrix, a
// rank-3 tensor and a tiny matrix, across several storage pairs (one set of
// launches each) and sharing one, against the CPU backend's multi op (one
// ADAFACTOR_STEP per tensor, bit for bit: plugins/backends/cpu/
// multi_tensor_light_optimizers_test); host lr scales, weight decays and
// parameter scaling, then the first moment, step counters, the device lr
// and stochastic rounding; a found_inf step changes no byte.
TEST_F(CudaMemoryLightOptimizersTest, MultiAdafactorMatchesCpuBits) {
  const std::vector<std::vector<int64_t>> shapes = {{70001}, {37, 129}, {4, 300, 257}, {1, 1}};
  const std::vector<MNT_DType> grads = {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16,
                                        MNT_DTYPE_BF16};
  const std::vector<float> lr_scales = {1.0f, 0.5f, 3.0f, 1.0f};
  const std::vector<float> weight_decays = {0.1f, 0.0f, 0.01f, 0.05f};
  const std::vector<int64_t> rounding_tensors = {3, 7, 1, 0};
  for (bool device_scalars : {false, true}) {
    SCOPED_TRACE(device_scalars ? "first moment, counters, device lr, stochastic"
                                : "host step and lr, parameter scaling");
    const float beta1 = device_scalars ? 0.9f : 0.0f;
    std::vector<std::unique_ptr<Pair>> state, counters;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const FactoredShape s = FactoredShapeOf(shapes[i].data(), static_cast<int>(shapes[i].size()));
      const int64_t n = s.numel(), second = s.factored ? s.row_count() : n;
      state.push_back(d_.Upload(Random(n), MNT_DTYPE_F32, {n}));
      state.push_back(d_.Upload(Uniform(second, 1e-4f, 1e-2f), MNT_DTYPE_F32, {second}));
      state.push_back(s.factored ? d_.Upload(Uniform(s.col_states(), 1e-4f, 1e-2f),
                                             MNT_DTYPE_F32, {s.col_states()})
                                 : nullptr);
      state.push_back(beta1 != 0.0f ? d_.Upload(Uniform(n, -0.1f, 0.1f), MNT_DTYPE_F32, {n})
                                    : nullptr);
      // Rounded to nearest: bf16, none, f16, bf16; stochastically: bf16.
      const bool none = !device_scalars && i == 1;
      state.push_back(none ? nullptr
                           : d_.Poisoned(device_scalars || i != 2 ? MNT_DTYPE_BF16
                                                                  : MNT_DTYPE_F16,
                                         {n}));
      counters.push_back(d_.UploadI32({static_cast<int32_t>(2 + i)}, {1}));
    }
    std::vector<const Pair*> out;
    for (const auto& t : state) out.push_back(t.get());
    auto mult = d_.Upload({0.75f}, MNT_DTYPE_F32, {1});
    auto lr = d_.Upload({3e-3f}, MNT_DTYPE_F32, {1});
    MNT_MultiAdafactorParams p{};
    p.struct_size = MNT_MultiAdafactorParams_STRUCT_SIZE;
    p.lr = 1e-2f;
    p.beta1 = beta1;
    p.decay_rate = -0.8f;
    p.epsilon1 = 1e-30f;
    p.epsilon2 = 1e-3f;
    p.clip_threshold = 1.0f;
    p.scale_parameter = device_scalars ? 0 : 1;
    p.step = 1;
    p.rounding = device_scalars ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN;
    p.rounding_seed = 99;
    p.num_tensors = static_cast<int64_t>(shapes.size());
    p.lr_scales = lr_scales.data();
    p.weight_decays = weight_decays.data();
    p.rounding_tensors = device_scalars ? rounding_tensors.data() : nullptr;
    for (int step = 0; step < 4; ++step) {
      auto found = d_.Upload({step == 2 ? 1.0f : 0.0f}, MNT_DTYPE_F32, {1});
      std::vector<std::unique_ptr<Pair>> grad_pairs;
      std::vector<const Pair*> in{found.get(), mult.get()};
      for (size_t i = 0; i < shapes.size(); ++i) {
        const FactoredShape s = FactoredShapeOf(shapes[i].data(), static_cast<int>(shapes[i].size()));
        grad_pairs.push_back(d_.Upload(Random(s.numel(), 0.1f), grads[i], shapes[i]));
        in.push_back(grad_pairs.back().get());
        in.push_back(device_scalars ? counters[i].get() : nullptr);
      }
      if (device_scalars) in.push_back(lr.get());
      const std::vector<uint8_t> before = d_.Bytes(*state[10], true);
      ASSERT_TRUE(d_.RunBoth(MNT_OP_MULTI_ADAFACTOR_STEP, in, out, &p).ok());
      if (step == 2) {
        EXPECT_EQ(d_.Bytes(*state[10], true), before) << "found_inf changed a master";
      } else {
        ++p.step;
      }
    }
    for (const auto& t : state) {
      if (t != nullptr) ExpectSameBits(*t, "multi adafactor");
    }
    for (const auto& c : counters) ExpectSameBits(*c, "multi adafactor step counter");
  }
}

}  // namespace
}  // namespace mnt::cuda

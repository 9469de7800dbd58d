// ABI 1.7 stochastic rounding of the bf16 working copy on the cuda backend
// against the CPU backend, bit for bit: ADAMW_STEP (host step and device
// step counter), SGD_STEP, MULTI_ADAMW_STEP and MULTI_SGD_STEP, on sizes
// that take the 4-element vector path, a tail and many blocks. Each copy is
// also checked against the specified bits (common/stochastic_rounding.h) of
// the CPU's new master. ABI 1.11: the four ops over pieces of parameters
// (views cut at random element offsets, so mostly unaligned) with their
// tensor and first element indices give the whole parameters' bits on both
// backends.
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "plugins/sdk/op_list.h"
#include "plugins/sdk/tensor.h"

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

// ABI 1.11 (MNT_CAPABILITY_OPTIMIZER_PIECES). One parameter (SGD_STEP,
// ADAMW_STEP: three pieces) or two (the multi-tensor ops: the tables of
// three "ranks" {P0[0, a)}, {P0[a, n0), P1[0, b)}, {P1[b, n1)}, tensor
// indices 7 and 11) stepped whole by RunBoth and in pieces on each backend:
// every output of the pieces is the whole step's bits, and the whole step's
// are the same on both backends.
TEST_F(CudaStochasticRoundingTest, PiecesGiveTheWholeParametersBits) {
  const int64_t n0 = kSizes[2], n1 = kSizes[0];
  std::uniform_int_distribution<int64_t> cut0(1, n0 - 1), cut1(1, n1 - 1);
  int64_t c1 = cut0(rng_), c2 = cut0(rng_);
  while (c2 == c1) c2 = cut0(rng_);
  if (c2 < c1) std::swap(c1, c2);
  const int64_t a = cut0(rng_), b = cut1(rng_);
  struct Entry {
    size_t param;
    int64_t begin, end;
  };
  const int64_t tensor_of[2] = {7, 11};
  for (MNT_Op op : {MNT_OP_SGD_STEP, MNT_OP_ADAMW_STEP, MNT_OP_MULTI_ADAMW_STEP,
                    MNT_OP_MULTI_SGD_STEP}) {
    SCOPED_TRACE(sdk::OpName(op));
    const bool multi = op == MNT_OP_MULTI_ADAMW_STEP || op == MNT_OP_MULTI_SGD_STEP;
    const bool adamw = op == MNT_OP_ADAMW_STEP || op == MNT_OP_MULTI_ADAMW_STEP;
    std::vector<std::unique_ptr<Pair>> keep;
    const auto own = [&](std::unique_ptr<Pair> p) {
      keep.push_back(std::move(p));
      return keep.back().get();
    };
    // Per parameter: its gradient and two identical copies of its outputs
    // (master, momentum or m and v, working copy).
    struct Param {
      const Pair* grad;
      std::vector<const Pair*> whole, pieces;
    };
    std::vector<Param> params;
    const std::vector<int64_t> sizes = multi ? std::vector<int64_t>{n0, n1}
                                             : std::vector<int64_t>{n0};
    for (int64_t n : sizes) {
      Param p;
      p.grad = own(d_.Upload(Random(n), MNT_DTYPE_BF16, {n}));
      std::vector<std::vector<float>> init{Random(n), Random(n, 0.1f)};
      if (adamw) {
        std::vector<float> v = Random(n, 0.1f);
        for (float& e : v) e = e * e;
        init.push_back(v);
      }
      for (std::vector<const Pair*>* copy : {&p.whole, &p.pieces}) {
        for (const std::vector<float>& v : init) {
          copy->push_back(own(d_.Upload(v, MNT_DTYPE_F32, {n})));
        }
        copy->push_back(own(d_.Poisoned(MNT_DTYPE_BF16, {n})));
      }
      params.push_back(std::move(p));
    }
    const Pair* mult = own(d_.Upload({0.5f}, MNT_DTYPE_F32, {1}));

    // The params of one call over `entries`: the whole call gives the
    // tensor indices and no element indices (NULL: from 0).
    std::vector<int64_t> tensors, elements;
    MNT_SgdParams sgd{};
    MNT_AdamWParams adam{};
    MNT_MultiAdamWParams multi_adam{};
    MNT_MultiSgdParams multi_sgd{};
    const auto params_for = [&](const std::vector<Entry>& entries, bool whole) -> const void* {
      tensors.clear();
      elements.clear();
      for (const Entry& e : entries) {
        tensors.push_back(tensor_of[e.param]);
        elements.push_back(e.begin);
      }
      const int64_t count = static_cast<int64_t>(entries.size());
      switch (op) {
        case MNT_OP_SGD_STEP:
          sgd = {MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1, MNT_ROUNDING_STOCHASTIC,
                 kSeed, tensor_of[0], 21, entries[0].begin};
          return &sgd;
        case MNT_OP_ADAMW_STEP:
          adam = {MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 9,
                  MNT_ROUNDING_STOCHASTIC, kSeed, tensor_of[0], entries[0].begin};
          return &adam;
        case MNT_OP_MULTI_ADAMW_STEP:
          multi_adam = {MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                        3, count, nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, 0,
                        tensors.data(), whole ? nullptr : elements.data()};
          return &multi_adam;
        default:
          multi_sgd = {MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 0, count, nullptr,
                       nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, 0, 13, tensors.data(),
                       whole ? nullptr : elements.data()};
          return &multi_sgd;
      }
    };

    // The whole step on both backends.
    std::vector<const Pair*> in, out;
    std::vector<Entry> all;
    if (multi) in = {nullptr, mult};
    for (size_t q = 0; q < params.size(); ++q) {
      in.push_back(params[q].grad);
      if (op == MNT_OP_MULTI_ADAMW_STEP) in.push_back(nullptr);  // no step counter
      out.insert(out.end(), params[q].whole.begin(), params[q].whole.end());
      all.push_back({q, 0, sizes[q]});
    }
    ASSERT_TRUE(d_.RunBoth(op, in, out, params_for(all, true)).ok());

    // The pieces, as views into the second copies, on each backend.
    const std::vector<std::vector<Entry>> calls =
        multi ? std::vector<std::vector<Entry>>{{{0, 0, a}}, {{0, a, n0}, {1, 0, b}},
                                                {{1, b, n1}}}
              : std::vector<std::vector<Entry>>{{{0, 0, c1}}, {{0, c1, c2}}, {{0, c2, n0}}};
    for (bool on_cuda : {true, false}) {
      const auto view = [&](const Pair& p, const Entry& e) {
        MNT_Tensor t = on_cuda ? p.cuda() : p.cpu();
        const MNT_Tensor v = sdk::MakeTensor(
            static_cast<char*>(t.data) + e.begin * static_cast<int64_t>(sdk::DTypeSize(t.dtype)),
            t.dtype, {e.end - e.begin});
        return v;
      };
      const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
      for (const std::vector<Entry>& entries : calls) {
        std::vector<MNT_Tensor> piece_in, piece_out;
        if (multi) piece_in = {absent, on_cuda ? mult->cuda() : mult->cpu()};
        for (const Entry& e : entries) {
          piece_in.push_back(view(*params[e.param].grad, e));
          if (op == MNT_OP_MULTI_ADAMW_STEP) {
            piece_in.push_back(sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}));
          }
          for (const Pair* t : params[e.param].pieces) piece_out.push_back(view(*t, e));
        }
        const sdk::BackendClient& c = on_cuda ? d_.cuda() : d_.cpu();
        const sdk::Status s = c.Run(op, piece_in, piece_out, params_for(entries, false));
        ASSERT_TRUE(s.ok()) << (on_cuda ? "cuda: " : "cpu: ") << s.message();
      }
    }
    for (size_t q = 0; q < params.size(); ++q) {
      SCOPED_TRACE(q);
      for (size_t k = 0; k < params[q].whole.size(); ++k) {
        ExpectSameBits(*params[q].whole[k], "whole");
        for (bool on_cuda : {true, false}) {
          EXPECT_EQ(d_.Bytes(*params[q].pieces[k], on_cuda),
                    d_.Bytes(*params[q].whole[k], on_cuda))
              << (on_cuda ? "cuda" : "cpu") << " output " << k;
        }
      }
      const int64_t step = op == MNT_OP_SGD_STEP ? 21 : op == MNT_OP_ADAMW_STEP ? 9
                           : adamw                ? 3
                                                  : 13;
      ExpectSpecified(*params[q].whole.front(), *params[q].whole.back(), step, tensor_of[q]);
    }
  }
}

}  // namespace
}  // namespace mnt::cuda

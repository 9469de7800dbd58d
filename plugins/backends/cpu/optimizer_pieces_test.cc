// ABI 1.11 (MNT_CAPABILITY_OPTIMIZER_PIECES): an optimizer step over pieces
// of a parameter -- contiguous element ranges of its flat buffer, as ZeRO-1
// element-range sharding steps them, possibly on different ranks -- writes
// exactly the bits of a step over the whole parameter (working copy, master
// and state) when each piece passes the parameter's tensor index and its
// first element's index (rounding_element, rounding_tensors,
// rounding_elements). SGD_STEP, ADAMW_STEP, MULTI_ADAMW_STEP and
// MULTI_SGD_STEP, on fresh random inputs with random cut points; the
// negative controls show pieces without those offsets get other bits (so
// the comparison can fail). Also the refusals of negative or overflowing
// indices.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/stochastic_rounding.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"
#include "plugins/sdk/capabilities.h"

namespace mnt::cpu {
namespace {

using testing::BackendFixture;

constexpr uint64_t kSeed = 0x243f6a8885a308d3ull;

// [begin, end) of a parameter's flat buffer.
struct Range {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};

class OptimizerPiecesTest : public BackendFixture {
 protected:
  // A 1-D view of elements [r.begin, r.end) of t (an offset into its
  // allocation, as the ABI allows).
  static MNT_Tensor Piece(const MNT_Tensor& t, Range r) {
    const int64_t element_bytes = static_cast<int64_t>(sdk::DTypeSize(t.dtype));
    void* data = static_cast<char*>(t.data) + r.begin * element_bytes;
    return sdk::MakeTensor(data, t.dtype, {r.size()});
  }

  // `count` pieces covering [0, n), cut at distinct random points (so
  // usually not at a multiple of 4 or of a thread block).
  std::vector<Range> Cuts(int64_t n, int count) {
    std::vector<int64_t> at{0, n};
    while (static_cast<int>(at.size()) < count + 1) {
      const int64_t c = 1 + static_cast<int64_t>(rng()() % static_cast<uint64_t>(n - 1));
      bool seen = false;
      for (int64_t a : at) seen = seen || a == c;
      if (!seen) at.push_back(c);
    }
    std::sort(at.begin(), at.end());
    std::vector<Range> r;
    for (size_t i = 0; i + 1 < at.size(); ++i) r.push_back({at[i], at[i + 1]});
    return r;
  }

  // Identical copies of one parameter's optimizer state: one stepped whole,
  // one in pieces with offsets, one in pieces without (the control).
  struct State {
    std::vector<MNT_Tensor> whole, pieces, control;  // each: master, state..., working
  };
  // master F32, `states` F32 state tensors (AdamW: m, v >= 0; SGD:
  // momentum), a BF16 working copy; `dims` the parameter's shape.
  State MakeState(std::initializer_list<int64_t> dims, int states) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<std::vector<double>> init{Random(n)};
    for (int s = 0; s < states; ++s) init.push_back(s == 1 ? Random(n, 0.0, 0.1) : Random(n));
    State st;
    for (std::vector<MNT_Tensor>* copy : {&st.whole, &st.pieces, &st.control}) {
      for (const std::vector<double>& v : init) copy->push_back(Upload(v, MNT_DTYPE_F32, dims));
      copy->push_back(Upload(Download(copy->front()), MNT_DTYPE_BF16, dims));
    }
    return st;
  }

  // The pieces' outputs of one parameter's state, in ABI operand order.
  static std::vector<MNT_Tensor> Pieces(const std::vector<MNT_Tensor>& state, Range r) {
    std::vector<MNT_Tensor> out;
    for (const MNT_Tensor& t : state) out.push_back(Piece(t, r));
    return out;
  }

  // The whole parameter's working copy is the specified bits of its new
  // master (common/stochastic_rounding.h): element i of tensor `tensor`.
  void ExpectSpecified(const MNT_Tensor& master, const MNT_Tensor& working, int64_t step,
                       int64_t tensor) {
    const std::vector<double> w = Download(master);
    const std::vector<uint8_t> k = Bytes(working);
    const uint64_t key = StochasticRoundingKey(kSeed, step, tensor);
    for (size_t i = 0; i < w.size(); ++i) {
      uint16_t got;
      std::memcpy(&got, k.data() + 2 * i, 2);
      ASSERT_EQ(got, FloatToBf16BitsStochastic(static_cast<float>(w[i]), key,
                                               static_cast<int64_t>(i)))
          << "element " << i;
    }
  }

  // Whole and pieces hold the same bits in every output; the control's
  // working copy differs from them (its master and state do not: they do
  // not depend on the rounding).
  void ExpectPiecesMatch(const State& st, const char* what) {
    SCOPED_TRACE(what);
    for (size_t k = 0; k < st.whole.size(); ++k) {
      EXPECT_EQ(Bytes(st.pieces[k]), Bytes(st.whole[k])) << "output " << k;
    }
    for (size_t k = 0; k + 1 < st.whole.size(); ++k) {
      EXPECT_EQ(Bytes(st.control[k]), Bytes(st.whole[k])) << "control output " << k;
    }
    EXPECT_NE(Bytes(st.control.back()), Bytes(st.whole.back()))
        << "pieces stepped without their offsets gave the whole parameter's working copy: "
           "the comparison above could not fail";
  }
};

TEST_F(OptimizerPiecesTest, TheCpuBackendOffersIt) {
  EXPECT_TRUE(sdk::HasCapability(CpuBackendPluginApi(), MNT_CAPABILITY_OPTIMIZER_PIECES));
}

TEST_F(OptimizerPiecesTest, SgdStepPiecesGiveTheWholeParametersBits) {
  State st = MakeState({131, 167}, 1);  // above the CPU's threading threshold
  const int64_t n = 131 * 167;
  for (int64_t step = 30; step < 32; ++step) {
    const MNT_Tensor g = Upload(Random(n), MNT_DTYPE_BF16, {131, 167});
    const MNT_SgdParams whole{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 1e-4f, 1,
                              MNT_ROUNDING_STOCHASTIC, kSeed, 3, step, 0};
    ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {g}, st.whole, &whole).ok());
    for (Range r : Cuts(n, 3)) {
      MNT_SgdParams p = whole;
      p.rounding_element = r.begin;
      ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {Piece(g, r)}, Pieces(st.pieces, r), &p).ok());
      p.rounding_element = 0;
      ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {Piece(g, r)}, Pieces(st.control, r), &p).ok());
    }
  }
  ExpectSpecified(st.whole[0], st.whole[2], 31, 3);
  ExpectPiecesMatch(st, "SGD_STEP");
}

TEST_F(OptimizerPiecesTest, AdamWStepPiecesGiveTheWholeParametersBits) {
  for (int64_t n : {int64_t{40009}, int64_t{37}}) {
    SCOPED_TRACE(n);
    State st = MakeState({n}, 2);
    // Each piece keeps its own step counter (as each rank would).
    MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
    MNT_Tensor whole_counter = UploadI32({4}, {1});
    const std::vector<Range> cuts = Cuts(n, 2);
    std::vector<MNT_Tensor> counters;
    for (size_t i = 0; i < 2 * cuts.size(); ++i) counters.push_back(UploadI32({4}, {1}));
    for (int step = 0; step < 2; ++step) {
      const MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
      const MNT_Tensor mult = Upload({0.5}, MNT_DTYPE_F32, {1});
      const MNT_AdamWParams whole{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f,
                                  0.01f, 1, MNT_ROUNDING_STOCHASTIC, kSeed, 6, 0};
      ASSERT_TRUE(
          Run(MNT_OP_ADAMW_STEP, {g, absent, mult, whole_counter}, st.whole, &whole).ok());
      for (size_t i = 0; i < cuts.size(); ++i) {
        const Range r = cuts[i];
        MNT_AdamWParams p = whole;
        p.rounding_element = r.begin;
        ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {Piece(g, r), absent, mult, counters[2 * i]},
                        Pieces(st.pieces, r), &p)
                        .ok());
        p.rounding_element = 0;
        ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {Piece(g, r), absent, mult, counters[2 * i + 1]},
                        Pieces(st.control, r), &p)
                        .ok());
      }
    }
    ExpectSpecified(st.whole[0], st.whole[3], 6, 6);  // counter 4, two steps: step 6
    if (n < 100) {
      // A few dozen elements: the control may match by chance; only the
      // pieces are asserted.
      for (size_t k = 0; k < st.whole.size(); ++k) {
        EXPECT_EQ(Bytes(st.pieces[k]), Bytes(st.whole[k])) << "output " << k;
      }
      continue;
    }
    ExpectPiecesMatch(st, "ADAMW_STEP");
  }
}

// Two parameters (tensor indices 8 and 12: not consecutive, so
// rounding_tensor + i cannot stand in for rounding_tensors) stepped by one
// table, and the same two split over three "ranks": {P0[0, a)},
// {P0[a, n0), P1[0, b)}, {P1[b, n1)}, each a table of its pieces with
// rounding_tensors and rounding_elements. The controls: the rank tables
// without the arrays (tensor index rounding_tensor + i, element 0), with
// the tensors only and with the elements only: each gives other
// working-copy bits.
class MultiPiecesTest : public OptimizerPiecesTest {
 protected:
  struct Entry {
    size_t param;
    Range range;
  };
  // ZeRO-1's element-range shards of two parameters over three ranks.
  std::vector<std::vector<Entry>> Shards(int64_t n0, int64_t n1) {
    const int64_t a = Cuts(n0, 2)[0].end, b = Cuts(n1, 2)[0].end;
    return {{{0, {0, a}}}, {{0, {a, n0}}, {1, {0, b}}}, {{1, {b, n1}}}};
  }

  enum class Arrays { kBoth, kNone, kTensorsOnly, kElementsOnly };

  // One rank's table as a MULTI_ADAMW_STEP (adamw) or MULTI_SGD_STEP call on
  // `states` (per parameter), with the arrays `arrays` says.
  void RunRank(bool adamw, const std::vector<Entry>& entries,
               const std::vector<std::vector<MNT_Tensor>*>& states,
               const std::vector<MNT_Tensor>& grads, const std::vector<int64_t>& param_tensor,
               Arrays arrays, int64_t step) {
    std::vector<int64_t> tensors, elements;
    std::vector<MNT_Tensor> in{sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}),
                               Upload({0.25}, MNT_DTYPE_F32, {1})},
                            out;
    std::vector<float> lr_scales;
    for (const Entry& e : entries) {
      tensors.push_back(param_tensor[e.param]);
      elements.push_back(e.range.begin);
      lr_scales.push_back(e.param == 0 ? 1.0f : 0.5f);
      in.push_back(Piece(grads[e.param], e.range));
      if (adamw) in.push_back(UploadI32({static_cast<int32_t>(step - 1)}, {1}));
      for (const MNT_Tensor& t : Pieces(*states[e.param], e.range)) out.push_back(t);
    }
    const bool with_tensors = arrays == Arrays::kBoth || arrays == Arrays::kTensorsOnly;
    const bool with_elements = arrays == Arrays::kBoth || arrays == Arrays::kElementsOnly;
    const int64_t count = static_cast<int64_t>(entries.size());
    // Without rounding_tensors entry i takes rounding_tensor + i: the
    // rank's first parameter's index.
    const int64_t first = param_tensor[entries[0].param];
    if (adamw) {
      const MNT_MultiAdamWParams p{MNT_MultiAdamWParams_STRUCT_SIZE,
                                   1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, count,
                                   lr_scales.data(), nullptr, MNT_ROUNDING_STOCHASTIC, kSeed,
                                   first, with_tensors ? tensors.data() : nullptr,
                                   with_elements ? elements.data() : nullptr};
      ASSERT_TRUE(Run(MNT_OP_MULTI_ADAMW_STEP, in, out, &p).ok());
    } else {
      const MNT_MultiSgdParams p{MNT_MultiSgdParams_STRUCT_SIZE, 0.05f, 0.9f, 1e-3f, 0, count,
                                 lr_scales.data(), nullptr, MNT_ROUNDING_STOCHASTIC, kSeed,
                                 first, step, with_tensors ? tensors.data() : nullptr,
                                 with_elements ? elements.data() : nullptr};
      ASSERT_TRUE(Run(MNT_OP_MULTI_SGD_STEP, in, out, &p).ok());
    }
  }

  void Check(bool adamw) {
    const int64_t n0 = 20011, n1 = 4099;
    const std::vector<int64_t> param_tensor{8, 12};
    const int states = adamw ? 2 : 1;
    // [param]: whole, pieces, control without arrays; and two more controls.
    std::vector<State> st{MakeState({n0}, states), MakeState({n1}, states)};
    std::vector<State> partial{MakeState({n0}, states), MakeState({n1}, states)};
    // The partial controls' initial values must be the others'.
    for (size_t q = 0; q < 2; ++q) {
      for (size_t k = 0; k < st[q].whole.size(); ++k) {
        const MNT_DType dt = st[q].whole[k].dtype;
        const int64_t n = q == 0 ? n0 : n1;
        partial[q].pieces[k] = Upload(Download(st[q].whole[k]), dt, {n});
        partial[q].control[k] = Upload(Download(st[q].whole[k]), dt, {n});
      }
    }
    const std::vector<std::vector<Entry>> ranks = Shards(n0, n1);
    for (int64_t step = 1; step <= 2; ++step) {
      const std::vector<MNT_Tensor> grads{Upload(Random(n0), MNT_DTYPE_BF16, {n0}),
                                          Upload(Random(n1), MNT_DTYPE_F32, {n1})};
      // The whole table: tensors 8 and 12, elements from 0 (NULL).
      RunRank(adamw, {{0, {0, n0}}, {1, {0, n1}}}, {&st[0].whole, &st[1].whole}, grads,
              param_tensor, Arrays::kTensorsOnly, step);
      for (const std::vector<Entry>& rank : ranks) {
        RunRank(adamw, rank, {&st[0].pieces, &st[1].pieces}, grads, param_tensor,
                Arrays::kBoth, step);
        RunRank(adamw, rank, {&st[0].control, &st[1].control}, grads, param_tensor,
                Arrays::kNone, step);
        RunRank(adamw, rank, {&partial[0].pieces, &partial[1].pieces}, grads, param_tensor,
                Arrays::kTensorsOnly, step);
        RunRank(adamw, rank, {&partial[0].control, &partial[1].control}, grads,
                param_tensor, Arrays::kElementsOnly, step);
      }
    }
    bool tensors_only_differs = false, elements_only_differs = false;
    for (size_t q = 0; q < 2; ++q) {
      SCOPED_TRACE(q == 0 ? "parameter 0" : "parameter 1");
      ExpectSpecified(st[q].whole.front(), st[q].whole.back(), 2, param_tensor[q]);
      ExpectPiecesMatch(st[q], adamw ? "MULTI_ADAMW_STEP" : "MULTI_SGD_STEP");
      const std::vector<uint8_t> whole_copy = Bytes(st[q].whole.back());
      tensors_only_differs |= Bytes(partial[q].pieces.back()) != whole_copy;
      elements_only_differs |= Bytes(partial[q].control.back()) != whole_copy;
    }
    // Without rounding_elements the pieces after a cut draw element 0's
    // bits; without rounding_tensors rank 1's P1[0, b) draws tensor 9's.
    EXPECT_TRUE(tensors_only_differs) << "the pieces without rounding_elements matched";
    EXPECT_TRUE(elements_only_differs) << "the pieces without rounding_tensors matched";
  }
};

TEST_F(MultiPiecesTest, MultiAdamWStepPiecesGiveTheWholeParametersBits) { Check(true); }

TEST_F(MultiPiecesTest, MultiSgdStepPiecesGiveTheWholeParametersBits) { Check(false); }

// The new fields are checked: negative indices, and a first element index
// whose piece's last element would overflow int64, are refused naming them.
TEST_F(OptimizerPiecesTest, NegativeOrOverflowingIndicesAreRefused) {
  const int64_t n = 8;
  const MNT_Tensor g = Upload(Random(n), MNT_DTYPE_F32, {n});
  const auto fresh = [&] { return Upload(Random(n, 0.0, 1.0), MNT_DTYPE_F32, {n}); };
  MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.0f, 0.0f, 0,
                  MNT_ROUNDING_STOCHASTIC, kSeed, 0, 1, -1};
  EXPECT_EQ(Run(MNT_OP_SGD_STEP, {g}, {fresh()}, &s).message(),
            "SGD_STEP: rounding_element -1 must be >= 0");
  s.rounding_element = std::numeric_limits<int64_t>::max() - 6;
  EXPECT_EQ(Run(MNT_OP_SGD_STEP, {g}, {fresh()}, &s).message(),
            "SGD_STEP: rounding_element 9223372036854775801 + 8 elements overflows the "
            "element index");
  s.rounding_element = std::numeric_limits<int64_t>::max() - 7;  // the last is INT64_MAX
  EXPECT_TRUE(Run(MNT_OP_SGD_STEP, {g}, {fresh(), fresh(), Empty(MNT_DTYPE_BF16, {n})}, &s)
                  .ok());
  MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                    1, MNT_ROUNDING_NEAREST_EVEN, kSeed, 0, -7};
  EXPECT_EQ(Run(MNT_OP_ADAMW_STEP, {g}, {fresh(), fresh(), fresh()}, &a).message(),
            "ADAMW_STEP: rounding_element -7 must be >= 0");

  const std::vector<MNT_Tensor> adam_in{sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}),
                                        sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}), g,
                                        sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1}), g,
                                        sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1})};
  std::vector<MNT_Tensor> adam_out;
  for (int k = 0; k < 2; ++k) {
    for (int s2 = 0; s2 < 3; ++s2) adam_out.push_back(fresh());
    adam_out.push_back(sdk::MakeTensor(nullptr, MNT_DTYPE_BF16, {n}));
  }
  const int64_t bad_tensors[2] = {3, -2}, good[2] = {0, 5};
  MNT_MultiAdamWParams ma{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f,
                          1, 2, nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, 0,
                          bad_tensors, good};
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW_STEP, adam_in, adam_out, &ma).message(),
            "MULTI_ADAMW_STEP: rounding_tensors[1] -2 must be >= 0");
  ma.rounding_tensors = good;
  ma.rounding_elements = bad_tensors;
  EXPECT_EQ(Run(MNT_OP_MULTI_ADAMW_STEP, adam_in, adam_out, &ma).message(),
            "MULTI_ADAMW_STEP: rounding_elements[1] -2 must be >= 0");
  ma.rounding_elements = good;
  EXPECT_TRUE(Run(MNT_OP_MULTI_ADAMW_STEP, adam_in, adam_out, &ma).ok());

  const std::vector<MNT_Tensor> sgd_in{sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}),
                                       sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1}), g, g};
  const std::vector<MNT_Tensor> sgd_out{fresh(), sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {n}),
                                        sdk::MakeTensor(nullptr, MNT_DTYPE_BF16, {n}), fresh(),
                                        sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {n}),
                                        sdk::MakeTensor(nullptr, MNT_DTYPE_BF16, {n})};
  const int64_t overflow[2] = {std::numeric_limits<int64_t>::max(), 0};
  MNT_MultiSgdParams ms{MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.0f, 0.0f, 0, 2,
                        nullptr, nullptr, MNT_ROUNDING_STOCHASTIC, kSeed, 0, 1,
                        bad_tensors, nullptr};
  EXPECT_EQ(Run(MNT_OP_MULTI_SGD_STEP, sgd_in, sgd_out, &ms).message(),
            "MULTI_SGD_STEP: rounding_tensors[1] -2 must be >= 0");
  ms.rounding_tensors = nullptr;
  ms.rounding_elements = overflow;
  EXPECT_EQ(Run(MNT_OP_MULTI_SGD_STEP, sgd_in, sgd_out, &ms).message(),
            "MULTI_SGD_STEP: rounding_elements[0] 9223372036854775807 + 8 elements overflows "
            "the element index");
}

}  // namespace
}  // namespace mnt::cpu

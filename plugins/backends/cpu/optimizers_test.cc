// SGD_STEP and ADAMW_STEP against float64 re-implementations of
// torch.optim.SGD / torch.optim.AdamW over several steps; found_inf skips.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;
using testing::DTypeTolerance;
using testing::FloatDTypes;

constexpr int64_t kN = 97;
constexpr int kSteps = 5;

class OptimizersTest : public BackendFixture {};

TEST_F(OptimizersTest, SgdMatchesTorchFormula) {
  for (bool nesterov : {false, true}) {
    for (MNT_DType grad_dtype : FloatDTypes()) {
      SCOPED_TRACE(::testing::Message() << "nesterov " << nesterov << " grad "
                                        << sdk::DTypeName(grad_dtype));
      std::vector<double> w = Stored(Random(kN), MNT_DTYPE_F32), buf(kN, 0.0);
      MNT_Tensor tw = Upload(w, MNT_DTYPE_F32, {kN}, MNT_MEMORY_MASTER_WEIGHTS);
      MNT_Tensor tbuf = Upload(buf, MNT_DTYPE_F32, {kN}, MNT_MEMORY_OPTIMIZER_STATE);
      MNT_Tensor working = Empty(MNT_DTYPE_BF16, {kN});
      MNT_Tensor found = Upload({0.0}, MNT_DTYPE_F32, {1});
      MNT_Tensor mult = Upload({0.5}, MNT_DTYPE_F32, {1});
      const MNT_SgdParams p{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.01f, nesterov};
      for (int step = 0; step < kSteps; ++step) {
        const std::vector<double> g = Stored(Random(kN), grad_dtype);
        ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {Upload(g, grad_dtype, {kN}), found, mult},
                        {tw, tbuf, working}, &p).ok());
        for (int64_t i = 0; i < kN; ++i) {
          // torch: d_p = g + wd*p; buf = momentum*buf + d_p (buf = d_p on step
          // 1, the same as starting from zeros); nesterov: d_p += momentum*buf.
          double d = 0.5 * g[i] + double{0.01f} * w[i];
          buf[i] = double{0.9f} * buf[i] + d;
          d = nesterov ? d + double{0.9f} * buf[i] : buf[i];
          w[i] -= double{0.1f} * d;
        }
      }
      EXPECT_TRUE(AllCloseRelative(Download(tw), w, 1e-5));
      EXPECT_TRUE(AllCloseRelative(Download(tbuf), buf, 1e-5));
      EXPECT_TRUE(AllCloseRelative(Download(working), w, DTypeTolerance(MNT_DTYPE_BF16)));
    }
  }
}

TEST_F(OptimizersTest, SgdWithoutMomentumNeedsNoBuffer) {
  std::vector<double> w = Stored(Random(kN), MNT_DTYPE_F32);
  const std::vector<double> g = Stored(Random(kN), MNT_DTYPE_F32);
  MNT_Tensor tw = Upload(w, MNT_DTYPE_F32, {kN});
  const MNT_SgdParams p{MNT_SgdParams_STRUCT_SIZE, 0.5f, 0.0f, 0.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {Upload(g, MNT_DTYPE_F32, {kN})}, {tw}, &p).ok());
  for (int64_t i = 0; i < kN; ++i) w[i] -= 0.5 * g[i];
  EXPECT_TRUE(AllCloseRelative(Download(tw), w, 1e-6));
  const MNT_SgdParams pm{MNT_SgdParams_STRUCT_SIZE, 0.5f, 0.9f, 0.0f, 0};
  EXPECT_EQ(Run(MNT_OP_SGD_STEP, {Upload(g, MNT_DTYPE_F32, {kN})}, {tw}, &pm).message(),
            "SGD_STEP: out[1] momentum is missing but momentum is 0.9");
}

TEST_F(OptimizersTest, AdamWMatchesTorchFormula) {
  for (MNT_DType grad_dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(grad_dtype));
    // The reference uses exactly the float values the kernel receives.
    const double lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.1f;
    std::vector<double> w = Stored(Random(kN), MNT_DTYPE_F32), m(kN, 0.0), v(kN, 0.0);
    MNT_Tensor tw = Upload(w, MNT_DTYPE_F32, {kN}, MNT_MEMORY_MASTER_WEIGHTS);
    MNT_Tensor tm = Upload(m, MNT_DTYPE_F32, {kN}, MNT_MEMORY_OPTIMIZER_STATE);
    MNT_Tensor tv = Upload(v, MNT_DTYPE_F32, {kN}, MNT_MEMORY_OPTIMIZER_STATE);
    MNT_Tensor working = Empty(MNT_DTYPE_F16, {kN});
    MNT_Tensor mult = Upload({0.75}, MNT_DTYPE_F32, {1});
    for (int step = 1; step <= kSteps; ++step) {
      const std::vector<double> g = Stored(Random(kN), grad_dtype);
      const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, (float)lr, (float)b1,
                              (float)b2, (float)eps, (float)wd, step};
      // found_inf left out with a NULL tensor in the middle.
      MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
      ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {Upload(g, grad_dtype, {kN}), absent, mult},
                      {tw, tm, tv, working}, &p).ok());
      const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      for (int64_t i = 0; i < kN; ++i) {
        const double gi = 0.75 * g[i];
        w[i] *= 1 - lr * wd;
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        w[i] -= lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps);
      }
    }
    EXPECT_TRUE(AllCloseRelative(Download(tw), w, 1e-5));
    EXPECT_TRUE(AllCloseRelative(Download(tm), m, 1e-5, 1e-2));
    EXPECT_TRUE(AllCloseRelative(Download(tv), v, 1e-5, 1e-3));
    EXPECT_TRUE(AllCloseRelative(Download(working), w, DTypeTolerance(MNT_DTYPE_F16)));
  }
}

TEST_F(OptimizersTest, FoundInfSkipsBitIdentically) {
  MNT_Tensor tw = Upload(Random(kN), MNT_DTYPE_F32, {kN});
  MNT_Tensor tm = Upload(Random(kN), MNT_DTYPE_F32, {kN});
  MNT_Tensor tv = Upload(Random(kN, 0, 1), MNT_DTYPE_F32, {kN});
  MNT_Tensor working = Upload(Random(kN), MNT_DTYPE_BF16, {kN});
  MNT_Tensor g = Upload(Random(kN), MNT_DTYPE_F16, {kN});
  MNT_Tensor found = Upload({1.0}, MNT_DTYPE_F32, {1});
  const auto w0 = Bytes(tw), m0 = Bytes(tm), v0 = Bytes(tv), k0 = Bytes(working);
  const MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 3};
  ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g, found}, {tw, tm, tv, working}, &p).ok());
  EXPECT_EQ(Bytes(tw), w0);
  EXPECT_EQ(Bytes(tm), m0);
  EXPECT_EQ(Bytes(tv), v0);
  EXPECT_EQ(Bytes(working), k0);
  const MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 0};
  ASSERT_TRUE(Run(MNT_OP_SGD_STEP, {g, found}, {tw, tm, working}, &s).ok());
  EXPECT_EQ(Bytes(tw), w0);
  EXPECT_EQ(Bytes(tm), m0);
  // found_inf = 0 does step.
  MNT_Tensor zero = Upload({0.0}, MNT_DTYPE_F32, {1});
  ASSERT_TRUE(Run(MNT_OP_ADAMW_STEP, {g, zero}, {tw, tm, tv}, &p).ok());
  EXPECT_NE(Bytes(tw), w0);
}

TEST_F(OptimizersTest, AdamWRejectsStepZeroAndWrongState) {
  MNT_Tensor w = Upload(Random(kN), MNT_DTYPE_F32, {kN});
  MNT_Tensor m16 = Upload(Random(kN), MNT_DTYPE_BF16, {kN});
  MNT_Tensor g = Upload(Random(kN), MNT_DTYPE_F32, {kN});
  MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
  EXPECT_EQ(Run(MNT_OP_ADAMW_STEP, {g}, {w, w, w}, &p).message(),
            "ADAMW_STEP: step 0 must be >= 1 (1-based)");
  p.step = 1;
  EXPECT_EQ(Run(MNT_OP_ADAMW_STEP, {g}, {w, m16, w}, &p).message(),
            "ADAMW_STEP: out[1] m is bf16[97], expected dtype f32");
}

}  // namespace
}  // namespace mnt::cpu

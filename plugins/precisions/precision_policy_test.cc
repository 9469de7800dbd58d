#include "plugins/precisions/precision_policy.h"

#include "gtest/gtest.h"

namespace mnt::precision {
namespace {

TEST(MemoryPlanTest, BytesPerParameter) {
  struct Case {
    PrecisionKind kind;
    int weights, master, grads, master_grads;
  } cases[] = {
      {PrecisionKind::kFp32, 4, 0, 4, 0},
      {PrecisionKind::kTf32, 4, 0, 4, 0},
      {PrecisionKind::kBf16, 2, 4, 2, 4},
      {PrecisionKind::kFp16, 2, 4, 2, 4},
      {PrecisionKind::kFp8, 2, 4, 2, 4},  // as bf16's: FP8 lives in the GEMMs only
  };
  for (const Case& c : cases) {
    const PrecisionPolicy& p = PolicyFor(c.kind);
    for (int slots : {0, 1, 2}) {
      MemoryPlan plan;
      ASSERT_TRUE(MemoryPlanFor(p, slots, &plan).ok());
      EXPECT_EQ(plan.bytes_weights, c.weights) << p.name;
      EXPECT_EQ(plan.bytes_master_weights, c.master) << p.name;
      EXPECT_EQ(plan.bytes_gradients, c.grads) << p.name;
      EXPECT_EQ(plan.bytes_master_gradients, c.master_grads) << p.name;
      EXPECT_EQ(plan.bytes_optimizer_state, 4 * slots) << p.name;
    }
  }
}

TEST(MemoryPlanTest, MixedModelIsOneAndAHalfTimesFp32) {
  // "model in 16 and 32 bit": working + master weights over fp32 weights.
  MemoryPlan fp32, bf16;
  ASSERT_TRUE(MemoryPlanFor(PolicyFor(PrecisionKind::kFp32), 0, &fp32).ok());
  ASSERT_TRUE(MemoryPlanFor(PolicyFor(PrecisionKind::kBf16), 0, &bf16).ok());
  EXPECT_DOUBLE_EQ(
      double(bf16.bytes_weights + bf16.bytes_master_weights) /
          (fp32.bytes_weights + fp32.bytes_master_weights),
      1.5);
}

TEST(MemoryPlanTest, RejectsNegativeSlots) {
  MemoryPlan plan;
  sdk::Status s = MemoryPlanFor(PolicyFor(PrecisionKind::kFp16), -1, &plan);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("optimizer_state_slots=-1"), std::string::npos);
}

TEST(OpClassPolicyTest, Fp16MatmulRoundsOperandsAndAccumulatesInFp32) {
  OpClassPolicy op;
  ASSERT_TRUE(
      OpClassPolicyFor(PolicyFor(PrecisionKind::kFp16), MNT_OP_CLASS_MATMUL, &op)
          .ok());
  EXPECT_EQ(op.storage_dtype, MNT_DTYPE_F16);
  EXPECT_EQ(op.compute_dtype, MNT_DTYPE_F16);
  EXPECT_EQ(op.accumulate_dtype, MNT_DTYPE_F32);
  EXPECT_EQ(op.compute_mode, MNT_COMPUTE_F16);
}

TEST(OpClassPolicyTest, Fp8MatmulComputesInE4m3WithBf16ForTheRest) {
  const PrecisionPolicy& fp8 = PolicyFor(PrecisionKind::kFp8);
  EXPECT_STREQ(fp8.name, "fp8");
  EXPECT_EQ(fp8.scaled_matmul_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(fp8.matmul_compute, MNT_COMPUTE_BF16);
  EXPECT_FALSE(fp8.supports_loss_scaling);
  EXPECT_EQ(fp8.default_loss_scaling, MNT_LOSS_SCALING_NONE);
  OpClassPolicy op;
  ASSERT_TRUE(OpClassPolicyFor(fp8, MNT_OP_CLASS_MATMUL, &op).ok());
  EXPECT_EQ(op.storage_dtype, MNT_DTYPE_BF16);
  EXPECT_EQ(op.compute_dtype, MNT_DTYPE_F8_E4M3);
  EXPECT_EQ(op.accumulate_dtype, MNT_DTYPE_F32);
  EXPECT_EQ(op.compute_mode, MNT_COMPUTE_BF16);
  // Every other class is bf16's.
  const PrecisionPolicy& bf16 = PolicyFor(PrecisionKind::kBf16);
  for (int c = MNT_OP_CLASS_ELEMENTWISE; c <= MNT_OP_CLASS_EMBEDDING; ++c) {
    OpClassPolicy a, b;
    ASSERT_TRUE(OpClassPolicyFor(fp8, c, &a).ok());
    ASSERT_TRUE(OpClassPolicyFor(bf16, c, &b).ok());
    EXPECT_EQ(a.storage_dtype, b.storage_dtype) << c;
    EXPECT_EQ(a.compute_dtype, b.compute_dtype) << c;
    EXPECT_EQ(a.accumulate_dtype, b.accumulate_dtype) << c;
    EXPECT_EQ(a.compute_mode, b.compute_mode) << c;
  }
  // No other precision has scaled formats.
  for (PrecisionKind k : {PrecisionKind::kFp32, PrecisionKind::kTf32,
                          PrecisionKind::kBf16, PrecisionKind::kFp16}) {
    EXPECT_EQ(PolicyFor(k).scaled_matmul_dtype, MNT_DTYPE_INVALID) << PolicyFor(k).name;
  }
}

TEST(OpClassPolicyTest, RejectsUnknownClass) {
  OpClassPolicy op;
  for (int c : {0, 9, 1000}) {
    sdk::Status s = OpClassPolicyFor(PolicyFor(PrecisionKind::kBf16),
                                     static_cast<MNT_OpClass>(c), &op);
    EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT) << c;
    EXPECT_NE(s.message().find("unknown op class"), std::string::npos);
  }
}

}  // namespace
}  // namespace mnt::precision

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

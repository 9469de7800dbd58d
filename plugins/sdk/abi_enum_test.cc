// The ABI enum lists: every value a C caller may write is read without being
// loaded as the enum, and only the listed enumerators are accepted.
#include "plugins/sdk/abi_enum.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace mnt::sdk {
namespace {

// What a C caller (or garbage) can put in an enum field: any int32. Kept in
// a struct, as in the ABI's Args: returning the enum itself would load it.
template <typename E>
struct Args {
  E field;
};

template <typename E>
Args<E> FieldHolding(int32_t value) {
  Args<E> args;
  std::memcpy(&args.field, &value, sizeof(value));
  return args;
}

TEST(AbiEnumTest, ListsMatchTheHeaders) {
  EXPECT_EQ(std::size(AbiEnum<MNT_DType>::kValues), 9u);
  EXPECT_EQ(std::size(AbiEnum<MNT_ErrorCode>::kValues), 17u);
  EXPECT_EQ(std::size(AbiEnum<MNT_Op>::kValues), kNumOps + 1);
  EXPECT_STREQ(AbiEnum<MNT_ComputeMode>::Name(MNT_COMPUTE_TF32), "MNT_COMPUTE_TF32");
  EXPECT_STREQ(AbiEnum<MNT_MemoryCategory>::Name(MNT_MEMORY_ALL), "MNT_MEMORY_ALL");
  EXPECT_STREQ(AbiEnum<MNT_Op>::Name(MNT_OP_GEMM), "GEMM");
}

TEST(AbiEnumTest, ReadEnumTakesOnlyListedValues) {
  for (int32_t v : {-1, 9, 100, 100000, INT32_MIN, INT32_MAX}) {
    EXPECT_FALSE(ReadEnum(FieldHolding<MNT_DType>(v).field).has_value()) << v;
    EXPECT_EQ(RawEnum(FieldHolding<MNT_DType>(v).field), v);
  }
  // MNT_MEMORY_ALL (100) is listed; the gap below it is not.
  EXPECT_EQ(ReadEnum(FieldHolding<MNT_MemoryCategory>(100).field), MNT_MEMORY_ALL);
  EXPECT_FALSE(ReadEnum(FieldHolding<MNT_MemoryCategory>(99).field).has_value());
  EXPECT_EQ(ReadEnum(FieldHolding<MNT_Op>(MNT_OP_CLIP_COEFFICIENT).field), MNT_OP_CLIP_COEFFICIENT);
  EXPECT_FALSE(ReadEnum(FieldHolding<MNT_Op>(static_cast<int32_t>(kNumOps) + 1).field).has_value());
  EXPECT_FALSE(ReadEnum(FieldHolding<MNT_Op>(100000).field).has_value());
  EXPECT_EQ(ReadEnum(FieldHolding<MNT_ComputeMode>(0).field), MNT_COMPUTE_INVALID);
  EXPECT_FALSE(ReadEnum(FieldHolding<MNT_OpClass>(9).field).has_value());
  EXPECT_EQ(ReadEnum(FieldHolding<MNT_OpClass>(8).field), MNT_OP_CLASS_EMBEDDING);
}

// The collectives extension's enums: full names, the short names messages
// use, and the reduce op kept apart from MNT_ReduceKind (whose enumerators
// are MNT_REDUCE_*, a prefix of MNT_REDUCE_OP_*).
TEST(AbiEnumTest, CollectiveEnums) {
  EXPECT_EQ(std::size(AbiEnum<MNT_CollectiveOp>::kValues), 5u);
  EXPECT_EQ(std::size(AbiEnum<MNT_ReduceOp>::kValues), 4u);
  EXPECT_STREQ(AbiEnum<MNT_CollectiveOp>::Name(MNT_COLLECTIVE_REDUCE_SCATTER),
               "MNT_COLLECTIVE_REDUCE_SCATTER");
  EXPECT_STREQ(AbiEnum<MNT_ReduceOp>::Name(MNT_REDUCE_OP_AVG), "MNT_REDUCE_OP_AVG");
  EXPECT_STREQ(AbiEnum<MNT_ReduceKind>::Name(MNT_REDUCE_MEAN), "MNT_REDUCE_MEAN");

  EXPECT_STREQ(CollectiveOpName(MNT_COLLECTIVE_ALL_REDUCE), "ALL_REDUCE");
  EXPECT_STREQ(CollectiveOpName(MNT_COLLECTIVE_REDUCE_SCATTER), "REDUCE_SCATTER");
  EXPECT_STREQ(CollectiveOpName(MNT_COLLECTIVE_ALL_GATHER), "ALL_GATHER");
  EXPECT_STREQ(CollectiveOpName(MNT_COLLECTIVE_BROADCAST), "BROADCAST");
  EXPECT_STREQ(CollectiveOpName(MNT_COLLECTIVE_INVALID), "INVALID");
  EXPECT_STREQ(CollectiveReduceOpName(MNT_REDUCE_OP_SUM), "SUM");
  EXPECT_STREQ(CollectiveReduceOpName(MNT_REDUCE_OP_AVG), "AVG");
  EXPECT_STREQ(CollectiveReduceOpName(MNT_REDUCE_OP_MAX), "MAX");
  EXPECT_STREQ(CollectiveReduceOpName(MNT_REDUCE_OP_INVALID), "INVALID");
  for (int32_t v : {-1, 5, 99, INT32_MIN, INT32_MAX}) {
    EXPECT_EQ(CollectiveOpName(v), nullptr) << v;
    EXPECT_FALSE(ReadEnum(FieldHolding<MNT_CollectiveOp>(v).field).has_value()) << v;
  }
  for (int32_t v : {-1, 4, 9, INT32_MAX}) {
    EXPECT_EQ(CollectiveReduceOpName(v), nullptr) << v;
    EXPECT_FALSE(ReadEnum(FieldHolding<MNT_ReduceOp>(v).field).has_value()) << v;
  }
  EXPECT_EQ(ReadEnum(FieldHolding<MNT_ReduceOp>(3).field), MNT_REDUCE_OP_MAX);
  static_assert(CollectiveOpName(MNT_COLLECTIVE_BROADCAST)[0] == 'B');
}

TEST(AbiEnumTest, IsKnownEnumIsConstexpr) {
  static_assert(IsKnownEnum<MNT_PluginKind>(MNT_PLUGIN_KIND_MODEL));
  static_assert(!IsKnownEnum<MNT_PluginKind>(4));
  static_assert(IsKnownEnum<MNT_LossScaling>(0));
  SUCCEED();
}

}  // namespace
}  // namespace mnt::sdk

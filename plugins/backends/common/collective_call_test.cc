// The collectives contract every backend checks (collective_call.h): each
// op's accepted forms and the checked counts, bytes and buffers; the
// in-place forms mnt_collectives.h allows and the overlaps it does not; one
// INVALID_ARGUMENT line naming the op and the operand for each bad call;
// Collectives_Start's operands checked as Run's; Communicator_Create's
// arguments.
#include "plugins/backends/common/collective_call.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {
namespace {

// Fake device memory: only addresses matter here.
char g_memory[1 << 16];

MNT_Tensor T(size_t offset, MNT_DType dtype, std::initializer_list<int64_t> dims) {
  return sdk::MakeTensor(g_memory + offset, dtype, dims);
}

MNT_Collectives_Run_Args Args(MNT_CollectiveOp op, const MNT_Tensor* in, const MNT_Tensor* out,
                              MNT_ReduceOp reduce = MNT_REDUCE_OP_SUM, int32_t root = 0) {
  MNT_Collectives_Run_Args a{};
  a.struct_size = MNT_Collectives_Run_Args_STRUCT_SIZE;
  a.op = op;
  a.reduce = reduce;
  a.root = root;
  a.input = in;
  a.output = out;
  return a;
}

// The error of a call expected to fail: INVALID_ARGUMENT, one line that
// starts with `prefix` and contains `part`.
void ExpectInvalid(const MNT_Collectives_Run_Args& a, int32_t rank, int32_t world,
                   const std::string& prefix, const std::string& part) {
  CollectiveCall call;
  const sdk::Status s = CheckCollectiveCall("Collectives_Run", a, rank, world, &call);
  ASSERT_FALSE(s.ok()) << "expected an error starting with '" << prefix << "'";
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT) << s.message();
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << s.message();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
}

CollectiveCall Checked(const MNT_Collectives_Run_Args& a, int32_t rank, int32_t world) {
  CollectiveCall call;
  const sdk::Status s = CheckCollectiveCall("Collectives_Run", a, rank, world, &call);
  EXPECT_TRUE(s.ok()) << s.message();
  return call;
}

TEST(CollectiveCallTest, AllReduceOfEachFloatTypeAndReduceOp) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    const MNT_Tensor in = T(0, dtype, {3, 5}), out = T(4096, dtype, {15});
    for (MNT_ReduceOp r : {MNT_REDUCE_OP_SUM, MNT_REDUCE_OP_AVG, MNT_REDUCE_OP_MAX}) {
      const CollectiveCall c = Checked(Args(MNT_COLLECTIVE_ALL_REDUCE, &in, &out, r), 1, 4);
      EXPECT_EQ(c.op, MNT_COLLECTIVE_ALL_REDUCE);
      EXPECT_STREQ(c.name, "ALL_REDUCE");
      EXPECT_TRUE(c.reduction());
      EXPECT_EQ(c.reduce, r);
      EXPECT_EQ(c.dtype, dtype);
      EXPECT_EQ(c.element_bytes, sdk::DTypeSize(dtype));
      EXPECT_EQ(c.input.data, in.data);
      EXPECT_EQ(c.output.data, out.data);
      EXPECT_EQ(c.input.elements, 15);
      EXPECT_EQ(c.output.elements, 15);
      EXPECT_EQ(c.input.bytes, 15 * sdk::DTypeSize(dtype));
      EXPECT_EQ(c.output.bytes, 15 * sdk::DTypeSize(dtype));
    }
  }
}

TEST(CollectiveCallTest, AllReduceInPlace) {
  const MNT_Tensor t = T(0, MNT_DTYPE_F32, {8});
  const CollectiveCall c = Checked(Args(MNT_COLLECTIVE_ALL_REDUCE, &t, &t), 0, 2);
  EXPECT_EQ(c.input.data, c.output.data);
  // Overlapping without being the same memory is refused.
  const MNT_Tensor shifted = T(4, MNT_DTYPE_F32, {8});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &t, &shifted), 0, 2,
                "ALL_REDUCE: input and output overlap without being the same memory", "");
  // Adjacent is fine.
  const MNT_Tensor next = T(32, MNT_DTYPE_F32, {8});
  Checked(Args(MNT_COLLECTIVE_ALL_REDUCE, &t, &next), 0, 2);
}

TEST(CollectiveCallTest, ReduceScatterTakesWorldTimesOutput) {
  const MNT_Tensor in = T(0, MNT_DTYPE_BF16, {4, 6}), out = T(4096, MNT_DTYPE_BF16, {6});
  const CollectiveCall c = Checked(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &in, &out), 3, 4);
  EXPECT_EQ(c.input.elements, 24);
  EXPECT_EQ(c.output.elements, 6);
  EXPECT_EQ(c.input.bytes, 48u);
  EXPECT_EQ(c.output.bytes, 12u);
  const MNT_Tensor short_in = T(0, MNT_DTYPE_BF16, {23});
  ExpectInvalid(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &short_in, &out), 0, 4,
                "REDUCE_SCATTER: input is bf16[23] with 23 elements",
                "expected world size 4 x output's 6");
  // Never in place, not even on the rank's own chunk.
  const MNT_Tensor own = T(2 * 6 * 2, MNT_DTYPE_BF16, {6});
  ExpectInvalid(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &in, &own), 2, 4,
                "REDUCE_SCATTER: output overlaps input", "does not run in place");
}

TEST(CollectiveCallTest, AllGatherMovesAnyDtype) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16, MNT_DTYPE_I32,
                          MNT_DTYPE_U8, MNT_DTYPE_F64, MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2}) {
    const MNT_Tensor in = T(0, dtype, {5}), out = T(4096, dtype, {3, 5});
    const CollectiveCall c =
        Checked(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &out, MNT_REDUCE_OP_INVALID), 1, 3);
    EXPECT_FALSE(c.reduction());
    EXPECT_EQ(c.input.bytes, 5 * sdk::DTypeSize(dtype));
    EXPECT_EQ(c.output.bytes, 15 * sdk::DTypeSize(dtype));
    EXPECT_EQ(c.reduce, MNT_REDUCE_OP_INVALID);  // not read for a gather
  }
  // The reduce op is not read, whatever it holds.
  const MNT_Tensor in = T(0, MNT_DTYPE_F32, {5}), out = T(4096, MNT_DTYPE_F32, {15});
  EXPECT_EQ(Checked(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &out, static_cast<MNT_ReduceOp>(77)),
                    0, 3)
                .reduce,
            MNT_REDUCE_OP_INVALID);
  const MNT_Tensor fourteen = T(4096, MNT_DTYPE_F32, {14});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &fourteen), 0, 3,
                "ALL_GATHER: output is f32[14] with 14 elements",
                "expected world size 3 x input's 5");
}

TEST(CollectiveCallTest, AllGatherInPlaceOnlyAsOwnChunk) {
  const MNT_Tensor out = T(0, MNT_DTYPE_F16, {4, 8});
  // Rank 2's chunk starts 2 x 8 x 2 bytes in.
  const MNT_Tensor own = T(32, MNT_DTYPE_F16, {8});
  const CollectiveCall c = Checked(Args(MNT_COLLECTIVE_ALL_GATHER, &own, &out), 2, 4);
  EXPECT_EQ(c.input.data, own.data);
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &own, &out), 1, 4,
                "ALL_GATHER: input overlaps output other than as this rank's own chunk",
                "rank 1 x 16 bytes");
  const MNT_Tensor skewed = T(34, MNT_DTYPE_F16, {8});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &skewed, &out), 2, 4, "ALL_GATHER: ",
                "own chunk");
}

TEST(CollectiveCallTest, BroadcastRootAndNonRoot) {
  const MNT_Tensor in = T(0, MNT_DTYPE_I32, {7}), out = T(4096, MNT_DTYPE_I32, {7});
  CollectiveCall c =
      Checked(Args(MNT_COLLECTIVE_BROADCAST, &in, &out, MNT_REDUCE_OP_INVALID, 1), 1, 2);
  EXPECT_EQ(c.root, 1);
  EXPECT_EQ(c.input.data, in.data);
  EXPECT_EQ(c.input.bytes, 28u);
  EXPECT_EQ(c.output.bytes, 28u);
  // A non-root rank: no input at all, an input with NULL data, or one that
  // is not read (and not range-checked): nothing read.
  MNT_Tensor no_data = in;
  no_data.data = nullptr;
  for (const MNT_Tensor* given : {static_cast<const MNT_Tensor*>(nullptr),
                                  static_cast<const MNT_Tensor*>(&no_data), &in}) {
    c = Checked(Args(MNT_COLLECTIVE_BROADCAST, given, &out, MNT_REDUCE_OP_INVALID, 1), 0, 2);
    EXPECT_EQ(c.input.data, nullptr);
    EXPECT_EQ(c.input.bytes, 0u);
    EXPECT_EQ(c.output.data, out.data);
    EXPECT_EQ(c.output.bytes, 28u);
  }
  // The root must give its input.
  ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, &no_data, &out, MNT_REDUCE_OP_INVALID, 1), 1, 2,
                "BROADCAST: input has NULL data", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, nullptr, &out, MNT_REDUCE_OP_INVALID, 0), 0, 2,
                "BROADCAST: input is NULL", "");
  // In place on the root.
  c = Checked(Args(MNT_COLLECTIVE_BROADCAST, &out, &out, MNT_REDUCE_OP_INVALID, 0), 0, 2);
  EXPECT_EQ(c.input.data, c.output.data);
  for (int32_t root : {-1, 2}) {
    ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, &in, &out, MNT_REDUCE_OP_INVALID, root), 0, 2,
                  "BROADCAST: root " + std::to_string(root) + " is outside [0, 2)", "");
  }
  // A given input still has to match, read or not.
  const MNT_Tensor longer = T(0, MNT_DTYPE_I32, {8});
  ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, &longer, &out, MNT_REDUCE_OP_INVALID, 1), 0, 2,
                "BROADCAST: input is i32[8] and output i32[7]", "one element count");
}

TEST(CollectiveCallTest, ZeroElements) {
  const MNT_Tensor in = T(0, MNT_DTYPE_F32, {0, 3}), out = T(4096, MNT_DTYPE_F32, {0});
  EXPECT_EQ(Checked(Args(MNT_COLLECTIVE_ALL_REDUCE, &in, &out), 0, 2).output.bytes, 0u);
  EXPECT_EQ(Checked(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &out), 0, 2).input.bytes, 0u);
}

TEST(CollectiveCallTest, OneClearErrorPerBadCall) {
  const MNT_Tensor f32 = T(0, MNT_DTYPE_F32, {4}), out = T(4096, MNT_DTYPE_F32, {4});
  const MNT_Tensor f16 = T(0, MNT_DTYPE_F16, {4}), i32 = T(0, MNT_DTYPE_I32, {4});
  const MNT_Tensor i32_out = T(4096, MNT_DTYPE_I32, {4});
  ExpectInvalid(Args(static_cast<MNT_CollectiveOp>(7), &f32, &out), 0, 2,
                "Collectives_Run: unknown collective op 7", "ALL_REDUCE, REDUCE_SCATTER");
  ExpectInvalid(Args(MNT_COLLECTIVE_INVALID, &f32, &out), 0, 2,
                "Collectives_Run: unknown collective op 0", "");
  ExpectInvalid(Args(static_cast<MNT_CollectiveOp>(-5), &f32, &out), 0, 2,
                "Collectives_Run: unknown collective op -5", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &f32, &out, MNT_REDUCE_OP_INVALID), 0, 2,
                "ALL_REDUCE: unknown reduce op 0", "SUM, AVG or MAX");
  ExpectInvalid(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &f32, &out, static_cast<MNT_ReduceOp>(9)),
                0, 2, "REDUCE_SCATTER: unknown reduce op 9", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &i32, &i32_out), 0, 2,
                "ALL_REDUCE: output is i32[4]; reductions take F32, F16 or BF16", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &f16, &out), 0, 2,
                "ALL_REDUCE: input is f16[4] but output is f32[4]", "one dtype");
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &f16, &out), 0, 1,
                "ALL_GATHER: input is f16[4] but output is f32[4]", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &f32, nullptr), 0, 2,
                "ALL_REDUCE: output is NULL", "");
  MNT_Tensor bad = out;
  bad.data = nullptr;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &f32, &bad), 0, 2,
                "ALL_REDUCE: output has NULL data", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, nullptr, &out), 0, 2,
                "ALL_REDUCE: input is NULL", "");
  bad = f32;
  bad.data = nullptr;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &bad, &out), 0, 2,
                "ALL_REDUCE: input has NULL data", "");
  const MNT_Tensor five = T(0, MNT_DTYPE_F32, {5});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &five, &out), 0, 2,
                "ALL_REDUCE: input is f32[5] and output f32[4]", "one element count");
  bad = f32;
  bad.dims[0] = -1;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &bad, &out), 0, 2,
                "ALL_REDUCE: input dims[0] is -1", "");
  bad = f32;
  bad.rank = MNT_MAX_RANK + 1;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &bad, &out), 0, 2,
                "ALL_REDUCE: input has rank 7 (0 to 6)", "");
  bad.rank = -1;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &f32, &bad), 0, 2,
                "ALL_REDUCE: output has rank -1", "");
  bad = f32;
  bad.struct_size = 8;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &bad, &out), 0, 2,
                "ALL_REDUCE: input struct_size 8 is smaller", "MNT_Tensor");
  bad = out;
  bad.dtype = static_cast<MNT_DType>(42);
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &f32, &bad), 0, 1,
                "ALL_GATHER: output has unknown dtype 42", "");
  bad = out;
  bad.rank = 4;
  bad.dims[0] = bad.dims[1] = bad.dims[2] = bad.dims[3] = int64_t{1} << 20;
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &f32, &bad), 0, 1, "ALL_GATHER: output ",
                "more elements than fit in 64 bits");
  bad.rank = 3;
  bad.dims[2] = int64_t{1} << 22;  // 2^62 elements, 2^64 bytes
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &f32, &bad), 0, 1, "ALL_GATHER: output ",
                "more bytes than fit in 64 bits");
  // A count that overflows once multiplied by the world size.
  const MNT_Tensor huge = T(0, MNT_DTYPE_F32, {int64_t{1} << 60});
  ExpectInvalid(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &f32, &huge), 0, 16, "REDUCE_SCATTER: ",
                "expected world size 16");
}

TEST(CollectiveCallTest, StartIsCheckedAsRun) {
  const MNT_Tensor in = T(0, MNT_DTYPE_BF16, {6}), out = T(4096, MNT_DTYPE_BF16, {3});
  MNT_Collectives_Start_Args start{};
  start.struct_size = MNT_Collectives_Start_Args_STRUCT_SIZE;
  start.op = MNT_COLLECTIVE_REDUCE_SCATTER;
  start.reduce = MNT_REDUCE_OP_AVG;
  start.root = 1;
  start.input = &in;
  start.output = &out;
  CollectiveCall c;
  ASSERT_TRUE(CheckCollectiveCall("Collectives_Start", start, 1, 2, &c).ok());
  EXPECT_EQ(c.op, MNT_COLLECTIVE_REDUCE_SCATTER);
  EXPECT_EQ(c.reduce, MNT_REDUCE_OP_AVG);
  EXPECT_EQ(c.root, 0) << "root is read for BROADCAST only";
  EXPECT_EQ(c.output.elements, 3);
  // The one message without an op names the entry point it was given.
  start.op = static_cast<MNT_CollectiveOp>(12);
  const sdk::Status s = CheckCollectiveCall("Collectives_Start", start, 0, 2, &c);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message().rfind("Collectives_Start: unknown collective op 12", 0), 0u)
      << s.message();
  EXPECT_EQ(c.op, MNT_COLLECTIVE_INVALID) << "a refused call leaves nothing checked";
}

TEST(CollectiveCallTest, CommunicatorArgs) {
  char id[MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES + 1] = {};
  EXPECT_TRUE(CheckCommunicatorArgs(0, 1, id, 1).ok());
  EXPECT_TRUE(CheckCommunicatorArgs(3, 4, id, MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES).ok());
  const struct {
    int32_t rank, world;
    const char* id;
    size_t size;
    const char* message;
  } bad[] = {
      {0, 0, id, 8, "Communicator_Create: world_size is 0 (at least 1)"},
      {2, 2, id, 8, "Communicator_Create: rank 2 is outside [0, 2) (the world size)"},
      {-1, 2, id, 8, "Communicator_Create: rank -1 is outside [0, 2) (the world size)"},
      {0, 2, nullptr, 8, "Communicator_Create: unique_id is NULL"},
      {0, 2, id, 0, "Communicator_Create: unique_id_size is 0 (1 to 256 bytes)"},
      {0, 2, id, 257, "Communicator_Create: unique_id_size is 257 (1 to 256 bytes)"},
  };
  for (const auto& b : bad) {
    const sdk::Status s = CheckCommunicatorArgs(b.rank, b.world, b.id, b.size);
    EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(s.message(), b.message);
  }
  EXPECT_EQ(CheckCommunicatorGiven("Collectives_Wait", nullptr).message(),
            "Collectives_Wait: communicator is NULL");
  EXPECT_TRUE(
      CheckCommunicatorGiven("Collectives_Run", reinterpret_cast<MNT_Communicator*>(id)).ok());
  EXPECT_EQ(CheckWorkGiven(nullptr).message(), "Collectives_Wait: work is NULL");
  EXPECT_TRUE(CheckWorkGiven(reinterpret_cast<MNT_CollectiveWork*>(id)).ok());
}

}  // namespace
}  // namespace mnt::backend

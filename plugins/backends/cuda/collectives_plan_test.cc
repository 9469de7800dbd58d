// The cuda collectives' host-side checks and NCCL arguments, on the CPU:
// every op's counts, types and buffers; in-place forms; the refusals those
// of the contract every backend shares (collective_call_test has them all);
// Collectives_Start's operands checked as Run's; the NCCL id's size; the
// ledger of a communicator's started works.
#include "plugins/backends/cuda/collectives_plan.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {
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
  CollectivePlan plan;
  const sdk::Status s = PlanCollective(a, rank, world, &plan);
  ASSERT_FALSE(s.ok()) << "expected an error containing '" << part << "'";
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT) << s.message();
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << s.message();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
}

CollectivePlan Plan(const MNT_Collectives_Run_Args& a, int32_t rank, int32_t world) {
  CollectivePlan plan;
  const sdk::Status s = PlanCollective(a, rank, world, &plan);
  EXPECT_TRUE(s.ok()) << s.message();
  return plan;
}

TEST(CollectivesPlanTest, AllReduceCountsElementsOfItsType) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    const MNT_Tensor in = T(0, dtype, {3, 5}), out = T(4096, dtype, {15});
    for (MNT_ReduceOp r : {MNT_REDUCE_OP_SUM, MNT_REDUCE_OP_AVG, MNT_REDUCE_OP_MAX}) {
      const CollectivePlan p = Plan(Args(MNT_COLLECTIVE_ALL_REDUCE, &in, &out, r), 1, 4);
      EXPECT_EQ(p.op, MNT_COLLECTIVE_ALL_REDUCE);
      EXPECT_EQ(p.reduce, r);
      EXPECT_EQ(p.count, 15u);
      EXPECT_EQ(p.type, dtype == MNT_DTYPE_F32   ? WireType::kF32
                        : dtype == MNT_DTYPE_F16 ? WireType::kF16
                                                 : WireType::kBF16);
      EXPECT_EQ(p.send, in.data);
      EXPECT_EQ(p.recv, out.data);
      EXPECT_EQ(p.input_bytes, 15 * sdk::DTypeSize(dtype));
      EXPECT_EQ(p.output_bytes, 15 * sdk::DTypeSize(dtype));
    }
  }
}

TEST(CollectivesPlanTest, AllReduceInPlace) {
  const MNT_Tensor t = T(0, MNT_DTYPE_F32, {8});
  const CollectivePlan p = Plan(Args(MNT_COLLECTIVE_ALL_REDUCE, &t, &t), 0, 2);
  EXPECT_EQ(p.send, p.recv);
  // Overlapping without being the same memory is refused.
  const MNT_Tensor shifted = T(4, MNT_DTYPE_F32, {8});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_REDUCE, &t, &shifted), 0, 2, "ALL_REDUCE: ",
                "overlap");
  // Adjacent is fine.
  const MNT_Tensor next = T(32, MNT_DTYPE_F32, {8});
  Plan(Args(MNT_COLLECTIVE_ALL_REDUCE, &t, &next), 0, 2);
}

TEST(CollectivesPlanTest, ReduceScatterTakesWorldTimesOutput) {
  const MNT_Tensor in = T(0, MNT_DTYPE_BF16, {4, 6}), out = T(4096, MNT_DTYPE_BF16, {6});
  const CollectivePlan p = Plan(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &in, &out), 3, 4);
  EXPECT_EQ(p.count, 6u);  // NCCL's recvcount
  EXPECT_EQ(p.type, WireType::kBF16);
  EXPECT_EQ(p.input_bytes, 48u);
  EXPECT_EQ(p.output_bytes, 12u);
  const MNT_Tensor short_in = T(0, MNT_DTYPE_BF16, {23});
  ExpectInvalid(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &short_in, &out), 0, 4,
                "REDUCE_SCATTER: input is bf16[23] with 23 elements",
                "expected world size 4 x output's 6");
  // Never in place, not even on the rank's own chunk.
  const MNT_Tensor own = T(2 * 6 * 2, MNT_DTYPE_BF16, {6});
  ExpectInvalid(Args(MNT_COLLECTIVE_REDUCE_SCATTER, &in, &own), 2, 4, "REDUCE_SCATTER: ",
                "does not run in place");
}

TEST(CollectivesPlanTest, AllGatherMovesBytesOfAnyDtype) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16, MNT_DTYPE_I32,
                          MNT_DTYPE_U8, MNT_DTYPE_F64}) {
    const MNT_Tensor in = T(0, dtype, {5}), out = T(4096, dtype, {3, 5});
    const CollectivePlan p = Plan(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &out,
                                       MNT_REDUCE_OP_INVALID),
                                  1, 3);
    EXPECT_EQ(p.type, WireType::kBytes);
    EXPECT_EQ(p.count, 5 * sdk::DTypeSize(dtype));  // NCCL's sendcount, in bytes
    EXPECT_EQ(p.output_bytes, 15 * sdk::DTypeSize(dtype));
    EXPECT_EQ(p.reduce, MNT_REDUCE_OP_INVALID);  // not read for a gather
  }
  const MNT_Tensor in = T(0, MNT_DTYPE_F32, {5}), out = T(4096, MNT_DTYPE_F32, {14});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &out), 0, 3,
                "ALL_GATHER: output is f32[14] with 14 elements",
                "expected world size 3 x input's 5");
}

TEST(CollectivesPlanTest, AllGatherInPlaceOnlyAsOwnChunk) {
  const MNT_Tensor out = T(0, MNT_DTYPE_F16, {4, 8});
  // Rank 2's chunk starts 2 x 8 x 2 bytes in.
  const MNT_Tensor own = T(32, MNT_DTYPE_F16, {8});
  const CollectivePlan p = Plan(Args(MNT_COLLECTIVE_ALL_GATHER, &own, &out), 2, 4);
  EXPECT_EQ(p.send, own.data);
  EXPECT_EQ(p.count, 16u);
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &own, &out), 1, 4, "ALL_GATHER: ",
                "rank 1 x 16 bytes");
  const MNT_Tensor skewed = T(34, MNT_DTYPE_F16, {8});
  ExpectInvalid(Args(MNT_COLLECTIVE_ALL_GATHER, &skewed, &out), 2, 4, "ALL_GATHER: ",
                "own chunk");
}

TEST(CollectivesPlanTest, BroadcastRootAndNonRoot) {
  const MNT_Tensor in = T(0, MNT_DTYPE_I32, {7}), out = T(4096, MNT_DTYPE_I32, {7});
  CollectivePlan p = Plan(Args(MNT_COLLECTIVE_BROADCAST, &in, &out, MNT_REDUCE_OP_INVALID, 1),
                          1, 2);
  EXPECT_EQ(p.root, 1);
  EXPECT_EQ(p.count, 28u);
  EXPECT_EQ(p.send, in.data);
  EXPECT_EQ(p.input_bytes, 28u);
  // A non-root rank: no input at all, an input with NULL data, or one that
  // is not read (and not range-checked).
  MNT_Tensor no_data = in;
  no_data.data = nullptr;
  for (const MNT_Tensor* given : {static_cast<const MNT_Tensor*>(nullptr),
                                  static_cast<const MNT_Tensor*>(&no_data), &in}) {
    p = Plan(Args(MNT_COLLECTIVE_BROADCAST, given, &out, MNT_REDUCE_OP_INVALID, 1), 0, 2);
    EXPECT_EQ(p.send, out.data);
    EXPECT_EQ(p.recv, out.data);
    EXPECT_EQ(p.input_bytes, 0u);
    EXPECT_EQ(p.output_bytes, 28u);
  }
  // The root must give its input.
  ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, &no_data, &out, MNT_REDUCE_OP_INVALID, 1), 1, 2,
                "BROADCAST: input has NULL data", "");
  ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, nullptr, &out, MNT_REDUCE_OP_INVALID, 0), 0, 2,
                "BROADCAST: input is NULL", "");
  // In place on the root.
  p = Plan(Args(MNT_COLLECTIVE_BROADCAST, &out, &out, MNT_REDUCE_OP_INVALID, 0), 0, 2);
  EXPECT_EQ(p.send, p.recv);
  for (int32_t root : {-1, 2}) {
    ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, &in, &out, MNT_REDUCE_OP_INVALID, root), 0, 2,
                  "BROADCAST: root " + std::to_string(root) + " is outside [0, 2)", "");
  }
  // A given input still has to match, read or not.
  const MNT_Tensor longer = T(0, MNT_DTYPE_I32, {8});
  ExpectInvalid(Args(MNT_COLLECTIVE_BROADCAST, &longer, &out, MNT_REDUCE_OP_INVALID, 1), 0, 2,
                "BROADCAST: input is i32[8] and output i32[7]", "one element count");
}

TEST(CollectivesPlanTest, ZeroElementsMoveNothing) {
  const MNT_Tensor in = T(0, MNT_DTYPE_F32, {0, 3}), out = T(4096, MNT_DTYPE_F32, {0});
  EXPECT_EQ(Plan(Args(MNT_COLLECTIVE_ALL_REDUCE, &in, &out), 0, 2).count, 0u);
  EXPECT_EQ(Plan(Args(MNT_COLLECTIVE_ALL_GATHER, &in, &out), 0, 2).count, 0u);
}

// The checks are the contract every backend shares
// (backends/common/collective_call.h, its cases in collective_call_test):
// PlanCollective refuses exactly what it refuses, with its message.
TEST(CollectivesPlanTest, ChecksAreTheSharedContracts) {
  const MNT_Tensor f32 = T(0, MNT_DTYPE_F32, {4}), out = T(4096, MNT_DTYPE_F32, {4});
  const MNT_Tensor f16 = T(0, MNT_DTYPE_F16, {4}), five = T(0, MNT_DTYPE_F32, {5});
  MNT_Tensor bad_rank = f32;
  bad_rank.rank = MNT_MAX_RANK + 1;
  const MNT_Collectives_Run_Args bad[] = {
      Args(static_cast<MNT_CollectiveOp>(7), &f32, &out),
      Args(MNT_COLLECTIVE_ALL_REDUCE, &f32, &out, MNT_REDUCE_OP_INVALID),
      Args(MNT_COLLECTIVE_ALL_REDUCE, &f16, &out),
      Args(MNT_COLLECTIVE_ALL_REDUCE, &five, &out),
      Args(MNT_COLLECTIVE_ALL_REDUCE, &bad_rank, &out),
      Args(MNT_COLLECTIVE_ALL_REDUCE, &f32, nullptr),
      Args(MNT_COLLECTIVE_BROADCAST, &f32, &out, MNT_REDUCE_OP_INVALID, 2),
  };
  for (const MNT_Collectives_Run_Args& a : bad) {
    backend::CollectiveCall call;
    const sdk::Status shared = backend::CheckCollectiveCall("Collectives_Run", a, 0, 2, &call);
    ASSERT_FALSE(shared.ok());
    ExpectInvalid(a, 0, 2, shared.message(), "");
  }
}

TEST(CollectivesPlanTest, CommunicatorArgs) {
  char id[kNcclUniqueIdBytes] = {};
  EXPECT_TRUE(CheckCommunicatorArgs(0, 1, id, sizeof(id)).ok());
  EXPECT_TRUE(CheckCommunicatorArgs(3, 4, id, sizeof(id)).ok());
  const struct {
    int32_t rank, world;
    const char* id;
    size_t size;
    const char* message;
  } bad[] = {
      {0, 0, id, sizeof(id), "Communicator_Create: world_size is 0 (at least 1)"},
      {2, 2, id, sizeof(id), "Communicator_Create: rank 2 is outside [0, 2) (the world size)"},
      {-1, 2, id, sizeof(id), "Communicator_Create: rank -1 is outside [0, 2) (the world size)"},
      {0, 2, nullptr, sizeof(id), "Communicator_Create: unique_id is NULL"},
      {0, 2, id, 20,
       "Communicator_Create: unique_id_size is 20, but the cuda backend's unique ids "
       "(Collectives_GetUniqueId: an NCCL id) have 128 bytes"},
  };
  for (const auto& b : bad) {
    const sdk::Status s = CheckCommunicatorArgs(b.rank, b.world, b.id, b.size);
    EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(s.message(), b.message);
  }
}

TEST(CollectivesPlanTest, StartIsPlannedAsRun) {
  const MNT_Tensor in = T(0, MNT_DTYPE_BF16, {6}), out = T(4096, MNT_DTYPE_BF16, {3});
  MNT_Collectives_Start_Args start{};
  start.struct_size = MNT_Collectives_Start_Args_STRUCT_SIZE;
  start.backend = reinterpret_cast<MNT_Backend*>(0x10);
  start.communicator = reinterpret_cast<MNT_Communicator*>(0x20);
  start.op = MNT_COLLECTIVE_REDUCE_SCATTER;
  start.reduce = MNT_REDUCE_OP_AVG;
  start.root = 1;
  start.input = &in;
  start.output = &out;
  start.work = reinterpret_cast<MNT_CollectiveWork*>(0x30);
  const MNT_Collectives_Run_Args run = RunArgsOf(start);
  EXPECT_EQ(run.struct_size, size_t{MNT_Collectives_Run_Args_STRUCT_SIZE});
  EXPECT_EQ(run.backend, start.backend);
  EXPECT_EQ(run.communicator, start.communicator);
  EXPECT_EQ(run.op, start.op);
  EXPECT_EQ(run.reduce, start.reduce);
  EXPECT_EQ(run.root, start.root);
  EXPECT_EQ(run.input, &in);
  EXPECT_EQ(run.output, &out);
  const CollectivePlan p = Plan(run, 1, 2);
  EXPECT_EQ(p.count, 3u);
  EXPECT_EQ(p.type, WireType::kBF16);
  EXPECT_EQ(p.reduce, MNT_REDUCE_OP_AVG);
  // The one message without an op names the entry point it was given.
  start.op = static_cast<MNT_CollectiveOp>(12);
  CollectivePlan plan;
  const sdk::Status s = PlanCollective(RunArgsOf(start), 0, 2, &plan, "Collectives_Start");
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message().rfind("Collectives_Start: unknown collective op 12", 0), 0u)
      << s.message();
}

struct FakeWork {
  int id = 0;
};
struct FakeOwner {
  int id = 0;
};
using Registry = WorkRegistry<FakeWork, FakeOwner>;

TEST(CollectivesPlanTest, WorkRegistryTakesEachWorkOnceInAnyOrder) {
  FakeWork w[4] = {{0}, {1}, {2}, {3}};
  FakeOwner owner;
  Registry registry;
  EXPECT_EQ(registry.Count(&owner), 0u);
  EXPECT_EQ(registry.Take(nullptr, &owner), Registry::Taken::kNotLive);
  EXPECT_EQ(registry.Take(&w[0], &owner), Registry::Taken::kNotLive) << "nothing was added";
  for (FakeWork& x : w) registry.Add(&x, &owner);
  EXPECT_EQ(registry.Count(&owner), 4u);
  // Reverse order; a second take of each finds nothing.
  for (int i = 3; i >= 0; --i) {
    EXPECT_EQ(registry.Take(&w[i], &owner), Registry::Taken::kYes) << i;
    EXPECT_EQ(registry.Take(&w[i], &owner), Registry::Taken::kNotLive) << i << " taken twice";
    EXPECT_EQ(registry.Count(&owner), static_cast<size_t>(i));
  }
  EXPECT_TRUE(registry.TakeAll(&owner).empty());
}

TEST(CollectivesPlanTest, WorkRegistryLeavesAnotherOwnersWorkAlone) {
  FakeWork a, b;
  FakeOwner mine, theirs;
  Registry registry;
  registry.Add(&a, &mine);
  registry.Add(&b, &theirs);
  EXPECT_EQ(registry.Take(&b, &mine), Registry::Taken::kOtherOwner);
  EXPECT_EQ(registry.Count(&theirs), 1u) << "another owner's work must stay live";
  EXPECT_EQ(registry.Take(&b, &theirs), Registry::Taken::kYes);
  EXPECT_EQ(registry.Take(&a, &mine), Registry::Taken::kYes);
}

TEST(CollectivesPlanTest, WorkRegistryTakeAllTakesOnlyTheOwnersWorks) {
  FakeWork w[5];
  FakeWork other;
  FakeOwner owner, someone;
  Registry registry;
  for (FakeWork& x : w) registry.Add(&x, &owner);
  registry.Add(&other, &someone);
  EXPECT_EQ(registry.Take(&w[2], &owner), Registry::Taken::kYes);  // waited for first
  std::vector<FakeWork*> left = registry.TakeAll(&owner);
  std::sort(left.begin(), left.end());
  const std::vector<FakeWork*> want = {&w[0], &w[1], &w[3], &w[4]};
  EXPECT_EQ(left, want);
  EXPECT_EQ(registry.Count(&owner), 0u);
  EXPECT_EQ(registry.Take(&w[0], &owner), Registry::Taken::kNotLive) << "TakeAll took it";
  EXPECT_TRUE(registry.TakeAll(&owner).empty());
  EXPECT_EQ(registry.Count(&someone), 1u);
  EXPECT_EQ(registry.Take(&other, &someone), Registry::Taken::kYes);
}

}  // namespace
}  // namespace mnt::cuda

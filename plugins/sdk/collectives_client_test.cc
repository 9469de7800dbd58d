// sdk::CollectivesClient, sdk::Communicator and sdk::CollectiveWork:
//   - Find applies the table rule the loader applies (the same message from
//     CheckExtensionChain for every broken table), and decides once whether
//     the table starts collectives; a version-2 table that breaks version
//     2's rule is used as version 1, its Start and Wait slots never read.
//   - Against a fake table: the unique id's size, a Create that fails with
//     a communicator or succeeds without one, a Start that succeeds without
//     a work, each an error; the communicator destroyed exactly once; a
//     work consumed by Wait, a second Wait refused without calling the
//     plugin; every plugin error freed once with the plugin's Error_Destroy.
//   - Against the CPU backend (world size 1, over MPI): Run and Start+Wait
//     give the input back bit for bit, and the backend's refusals come
//     through with their code and message.
#include "plugins/sdk/collectives_client.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/tensor.h"

namespace mnt::sdk {
namespace {

// ---------------------------------------------------------------- fake

// What the fake table does and what it saw.
struct Fake {
  size_t unique_id_size = 8;
  bool create_fails_with_communicator = false;
  bool create_gives_nothing = false;
  bool start_gives_no_work = false;
  int communicators_destroyed = 0;
  int runs = 0, starts = 0, waits = 0;
  int errors_made = 0, errors_destroyed = 0;
  MNT_CollectiveWork* last_waited = nullptr;
};
Fake fake;

// Fake handles: addresses only.
char communicator_storage, work_storage, error_storage, backend_storage;
MNT_Communicator* const kCommunicator = reinterpret_cast<MNT_Communicator*>(&communicator_storage);
MNT_CollectiveWork* const kWork = reinterpret_cast<MNT_CollectiveWork*>(&work_storage);

MNT_Error* MakeError() {
  ++fake.errors_made;
  return reinterpret_cast<MNT_Error*>(&error_storage);
}
void ErrorDestroy(MNT_Error*) { ++fake.errors_destroyed; }
const char* ErrorMessage(const MNT_Error*) { return "fake: refused"; }
MNT_ErrorCode ErrorGetCode(const MNT_Error*) { return MNT_ERROR_INVALID_ARGUMENT; }

MNT_Error* GetUniqueId(MNT_Collectives_GetUniqueId_Args* a) {
  std::memset(a->unique_id, 'x', sizeof(a->unique_id));
  a->unique_id_size = fake.unique_id_size;
  return nullptr;
}
MNT_Error* Create(MNT_Communicator_Create_Args* a) {
  if (fake.create_fails_with_communicator) {
    a->communicator = kCommunicator;
    return MakeError();
  }
  a->communicator = fake.create_gives_nothing ? nullptr : kCommunicator;
  return nullptr;
}
MNT_Error* Destroy(MNT_Communicator_Destroy_Args* a) {
  if (a->communicator != nullptr) ++fake.communicators_destroyed;
  return nullptr;
}
MNT_Error* Run(MNT_Collectives_Run_Args* a) {
  ++fake.runs;
  return a->communicator == nullptr ? MakeError() : nullptr;
}
MNT_Error* Start(MNT_Collectives_Start_Args* a) {
  ++fake.starts;
  if (a->communicator == nullptr) return MakeError();
  a->work = fake.start_gives_no_work ? nullptr : kWork;
  return nullptr;
}
MNT_Error* Wait(MNT_Collectives_Wait_Args* a) {
  ++fake.waits;
  fake.last_waited = a->work;
  return nullptr;
}
// The slots past a version-1 table's struct_size: never to be called.
MNT_Error* TrapStart(MNT_Collectives_Start_Args*) {
  ADD_FAILURE() << "Collectives_Start called through a table that does not start collectives";
  return nullptr;
}
MNT_Error* TrapWait(MNT_Collectives_Wait_Args*) {
  ADD_FAILURE() << "Collectives_Wait called through a table that does not start collectives";
  return nullptr;
}

// A backend plugin whose chain holds `ext` (static for the test's length).
struct FakePlugin {
  MNT_Collectives_Extension ext;
  MNT_Plugin_Api api;
  explicit FakePlugin(const MNT_Collectives_Extension& e) : ext(e) {
    api = MakePluginApi(MNT_PLUGIN_KIND_BACKEND, "fake", "test", nullptr, nullptr, nullptr,
                        nullptr, &ext.header.base);
    api.Error_Destroy = &ErrorDestroy;
    api.Error_Message = &ErrorMessage;
    api.Error_GetCode = &ErrorGetCode;
  }
  FakePlugin(const FakePlugin&) = delete;
};

MNT_Collectives_Extension Version2() {
  return MakeCollectivesExtension(&GetUniqueId, &Create, &Destroy, &Run, &Start, &Wait);
}

MNT_Backend* const kBackend = reinterpret_cast<MNT_Backend*>(&backend_storage);

class CollectivesClientFakeTest : public ::testing::Test {
 protected:
  void SetUp() override { fake = Fake(); }
  void TearDown() override { EXPECT_EQ(fake.errors_destroyed, fake.errors_made); }
};

TEST_F(CollectivesClientFakeTest, FindAppliesTheLoadersRule) {
  {
    FakePlugin p(Version2());
    CollectivesClient c;
    ASSERT_TRUE(CollectivesClient::Find(&p.api, kBackend, &c).ok());
    EXPECT_EQ(c.plugin(), &p.api);
    EXPECT_EQ(c.extension(), &p.ext);
    EXPECT_EQ(c.backend(), kBackend);
    EXPECT_EQ(c.version(), 2);
    EXPECT_TRUE(c.starts());
    EXPECT_TRUE(CheckExtensionChain(&p.api).ok());
  }
  // Each broken version-1 table: Find and the loader say the same line.
  struct Broken {
    const char* why;
    void (*breaks)(MNT_Collectives_Extension*);
  };
  const Broken broken[] = {
      {"extension 'collectives' has version 0 (versions start at 1)",
       [](MNT_Collectives_Extension* e) { e->header.version = 0; }},
      {"extension 'collectives': struct_size 64 is smaller than the 72 bytes of its version 1",
       [](MNT_Collectives_Extension* e) { e->header.base.struct_size = 64; }},
      {"extension 'collectives': Collectives_GetUniqueId is NULL (version 1's four calls are "
       "required)",
       [](MNT_Collectives_Extension* e) { e->Collectives_GetUniqueId = nullptr; }},
      {"extension 'collectives': Communicator_Create is NULL (version 1's four calls are "
       "required)",
       [](MNT_Collectives_Extension* e) { e->Communicator_Create = nullptr; }},
      {"extension 'collectives': Communicator_Destroy is NULL (version 1's four calls are "
       "required)",
       [](MNT_Collectives_Extension* e) { e->Communicator_Destroy = nullptr; }},
      {"extension 'collectives': Collectives_Run is NULL (version 1's four calls are required)",
       [](MNT_Collectives_Extension* e) { e->Collectives_Run = nullptr; }},
  };
  for (const Broken& b : broken) {
    MNT_Collectives_Extension e = Version2();
    b.breaks(&e);
    FakePlugin p(e);
    CollectivesClient c;
    const Status found = CollectivesClient::Find(&p.api, kBackend, &c);
    EXPECT_EQ(found.code(), MNT_ERROR_INVALID_ARGUMENT) << b.why;
    EXPECT_EQ(found.message(), b.why);
    EXPECT_EQ(c.extension(), nullptr) << "a refused table is not kept";
    const Status chain = CheckExtensionChain(&p.api);
    // The loader's generic header check words a version below 1 alike.
    EXPECT_EQ(chain.message(), b.why);
  }
  // No extension at all: NOT_FOUND, naming the plugin.
  MNT_Plugin_Api none = MakePluginApi(MNT_PLUGIN_KIND_BACKEND, "lonely", "test", nullptr, nullptr,
                                      nullptr, nullptr, nullptr);
  CollectivesClient c;
  const Status s = CollectivesClient::Find(&none, kBackend, &c);
  EXPECT_EQ(s.code(), MNT_ERROR_NOT_FOUND);
  EXPECT_EQ(s.message(), "the lonely backend has no collectives extension (mnt_collectives.h)");
}

TEST_F(CollectivesClientFakeTest, ATableThatDoesNotStartIsRunOnly) {
  struct Case {
    const char* why;
    void (*makes)(MNT_Collectives_Extension*);
  };
  const Case cases[] = {
      {"extension 'collectives' is version 1: it has no started collectives "
       "(Collectives_Start and Collectives_Wait are version 2's)",
       [](MNT_Collectives_Extension* e) {
         e->header.version = 1;
         e->header.base.struct_size = MNT_Collectives_Extension_V1_STRUCT_SIZE;
       }},
      {"extension 'collectives': struct_size 80 is smaller than the 88 bytes of its version 2",
       [](MNT_Collectives_Extension* e) { e->header.base.struct_size = 80; }},
      {"extension 'collectives': version 2 with Collectives_Start set, Collectives_Wait is NULL",
       [](MNT_Collectives_Extension* e) { e->Collectives_Wait = nullptr; }},
      {"extension 'collectives': version 2 with Collectives_Start is NULL, Collectives_Wait set",
       [](MNT_Collectives_Extension* e) { e->Collectives_Start = nullptr; }},
  };
  for (const Case& k : cases) {
    MNT_Collectives_Extension e = Version2();
    e.Collectives_Start = &TrapStart;
    e.Collectives_Wait = &TrapWait;
    k.makes(&e);
    FakePlugin p(e);
    CollectivesClient c;
    ASSERT_TRUE(CollectivesClient::Find(&p.api, kBackend, &c).ok()) << k.why;
    EXPECT_TRUE(CheckExtensionChain(&p.api).ok()) << "the loader takes it as version 1";
    EXPECT_FALSE(c.starts()) << k.why;
    EXPECT_EQ(CheckCollectivesStarts(e).message(), k.why);
    MNT_CollectiveWork* work = kWork;
    const Status s = c.Start(kCommunicator, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0,
                             nullptr, nullptr, &work);
    EXPECT_EQ(s.message(), k.why);
    EXPECT_EQ(work, nullptr);
    EXPECT_EQ(c.Wait(kCommunicator, kWork).message(), k.why);
    // Run still works.
    EXPECT_TRUE(c.Run(kCommunicator, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, nullptr,
                      nullptr)
                    .ok());
  }
}

TEST_F(CollectivesClientFakeTest, UniqueIdSizeIsChecked) {
  FakePlugin p(Version2());
  CollectivesClient c;
  ASSERT_TRUE(CollectivesClient::Find(&p.api, kBackend, &c).ok());
  std::string id;
  fake.unique_id_size = 5;
  ASSERT_TRUE(c.GetUniqueId(&id).ok());
  EXPECT_EQ(id, "xxxxx");
  for (size_t bad : {size_t{0}, size_t{MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES + 1}}) {
    fake.unique_id_size = bad;
    const Status s = c.GetUniqueId(&id);
    EXPECT_EQ(s.code(), MNT_ERROR_INTERNAL);
    EXPECT_EQ(s.message(), "Collectives_GetUniqueId succeeded with unique_id_size " +
                               std::to_string(bad) + " (1 to 256 bytes)");
  }
  fake.unique_id_size = MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES;
  ASSERT_TRUE(c.GetUniqueId(&id).ok());
  EXPECT_EQ(id.size(), size_t{MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES});
}

TEST_F(CollectivesClientFakeTest, CreateGivesACommunicatorOrAnError) {
  FakePlugin p(Version2());
  CollectivesClient c;
  ASSERT_TRUE(CollectivesClient::Find(&p.api, kBackend, &c).ok());
  std::unique_ptr<Communicator> comm;
  fake.create_fails_with_communicator = true;
  Status s = Communicator::Create(c, 0, 1, "id", &comm);
  EXPECT_EQ(s.code(), MNT_ERROR_INTERNAL);
  EXPECT_EQ(s.message(), "Communicator_Create failed (fake: refused) but gave a communicator");
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(fake.communicators_destroyed, 1) << "the stray communicator is destroyed";
  fake.create_fails_with_communicator = false;
  fake.create_gives_nothing = true;
  s = Communicator::Create(c, 0, 1, "id", &comm);
  EXPECT_EQ(s.message(), "Communicator_Create succeeded but gave no communicator");
  EXPECT_EQ(comm, nullptr);
  fake.create_gives_nothing = false;

  // Destroyed once: by Destroy() (reported), not again by the destructor.
  ASSERT_TRUE(Communicator::Create(c, 0, 1, "id", &comm).ok());
  EXPECT_EQ(comm->get(), kCommunicator);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->world_size(), 1);
  EXPECT_TRUE(comm->Destroy().ok());
  EXPECT_EQ(fake.communicators_destroyed, 2);
  EXPECT_EQ(comm->get(), nullptr);
  comm.reset();
  EXPECT_EQ(fake.communicators_destroyed, 2);
  // Or by the destructor.
  ASSERT_TRUE(Communicator::Create(c, 0, 1, "id", &comm).ok());
  comm.reset();
  EXPECT_EQ(fake.communicators_destroyed, 3);
}

TEST_F(CollectivesClientFakeTest, AWorkIsWaitedForOnce) {
  FakePlugin p(Version2());
  CollectivesClient c;
  ASSERT_TRUE(CollectivesClient::Find(&p.api, kBackend, &c).ok());
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::Create(c, 0, 1, "id", &comm).ok());
  CollectiveWork work;
  EXPECT_FALSE(work.pending());
  ASSERT_TRUE(
      comm->Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, nullptr, nullptr, &work).ok());
  ASSERT_TRUE(work.pending());
  EXPECT_EQ(work.get(), kWork);
  // Another Start into a pending work would lose it.
  Status s = comm->Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, nullptr, nullptr, &work);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fake.starts, 1);
  CollectiveWork moved = std::move(work);
  EXPECT_FALSE(work.pending());  // NOLINT(bugprone-use-after-move): moved-from is empty
  ASSERT_TRUE(comm->Wait(&moved).ok());
  EXPECT_EQ(fake.last_waited, kWork);
  EXPECT_FALSE(moved.pending());
  s = comm->Wait(&moved);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(),
            "Collectives_Wait: the work is not pending (waited for already, or never started)");
  EXPECT_EQ(fake.waits, 1) << "a work that is not pending never reaches the plugin";

  // A Start that succeeds without a work.
  fake.start_gives_no_work = true;
  s = comm->Start(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, nullptr, nullptr, &work);
  EXPECT_EQ(s.code(), MNT_ERROR_INTERNAL);
  EXPECT_EQ(s.message(), "Collectives_Start succeeded but gave no work");
  EXPECT_FALSE(work.pending());
}

TEST_F(CollectivesClientFakeTest, PluginErrorsComeThroughAndAreFreed) {
  FakePlugin p(Version2());
  CollectivesClient c;
  ASSERT_TRUE(CollectivesClient::Find(&p.api, kBackend, &c).ok());
  Status s = c.Run(nullptr, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, nullptr, nullptr);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "fake: refused");
  MNT_CollectiveWork* work = kWork;
  s = c.Start(nullptr, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, nullptr, nullptr, &work);
  EXPECT_EQ(s.message(), "fake: refused");
  EXPECT_EQ(work, nullptr);
  EXPECT_EQ(fake.errors_made, 2);
  EXPECT_EQ(fake.errors_destroyed, 2);
}

// ---------------------------------------------------------------- CPU

// The CPU backend with a world-size-1 communicator (MPI's singleton
// world); skipped, saying why, only where the backend says this machine has
// no MPI (FAILED_PRECONDITION).
class CollectivesClientCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const MNT_Plugin_Api* plugin = cpu::CpuBackendPluginApi();
    ASSERT_TRUE(BackendInstance::Create(plugin, "", &backend_).ok());
    ASSERT_TRUE(CollectivesClient::Find(plugin, backend_->backend(), &coll_).ok());
    std::string id;
    ASSERT_TRUE(coll_.GetUniqueId(&id).ok());
    const Status s = Communicator::Create(coll_, 0, 1, id, &comm_);
    if (s.code() == MNT_ERROR_FAILED_PRECONDITION) GTEST_SKIP() << s.message();
    ASSERT_TRUE(s.ok()) << s.message();
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_TRUE(comm_->Destroy().ok());
    }
  }

  std::unique_ptr<BackendInstance> backend_;
  CollectivesClient coll_;
  std::unique_ptr<Communicator> comm_;
};

TEST_F(CollectivesClientCpuTest, RunAndStartGiveTheInputBackWithOneRank) {
  EXPECT_EQ(coll_.version(), MNT_COLLECTIVES_EXTENSION_VERSION);
  ASSERT_TRUE(coll_.starts());
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> in(1037), run_out(in.size(), -1.0f), start_out(in.size(), -2.0f);
  for (float& x : in) x = normal(rng);
  const MNT_Tensor tin = MakeTensor(in.data(), MNT_DTYPE_F32, {static_cast<int64_t>(in.size())});
  const MNT_Tensor trun =
      MakeTensor(run_out.data(), MNT_DTYPE_F32, {static_cast<int64_t>(in.size())});
  const MNT_Tensor tstart =
      MakeTensor(start_out.data(), MNT_DTYPE_F32, {static_cast<int64_t>(in.size())});
  ASSERT_TRUE(comm_->Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tin, &trun).ok());
  CollectiveWork work;
  ASSERT_TRUE(
      comm_->Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, 0, &tin, &tstart, &work).ok());
  ASSERT_TRUE(comm_->Wait(&work).ok());
  EXPECT_EQ(std::memcmp(run_out.data(), in.data(), in.size() * 4), 0);
  EXPECT_EQ(std::memcmp(start_out.data(), in.data(), in.size() * 4), 0);
  // A work left pending is freed by Destroy (TearDown).
  ASSERT_TRUE(
      comm_->Start(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, 0, &tin, &trun, &work).ok());
}

TEST_F(CollectivesClientCpuTest, TheBackendsRefusalsComeThrough) {
  std::vector<float> a(8), b(9);
  const MNT_Tensor ta = MakeTensor(a.data(), MNT_DTYPE_F32, {8});
  const MNT_Tensor tb = MakeTensor(b.data(), MNT_DTYPE_F32, {9});
  Status s = comm_->Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &ta, &tb);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "ALL_REDUCE: input is f32[8] and output f32[9] (one element count for "
                         "both)");
  CollectiveWork work;
  s = comm_->Start(static_cast<MNT_CollectiveOp>(9), MNT_REDUCE_OP_SUM, 0, &ta, &ta, &work);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message().rfind("Collectives_Start: unknown collective op 9", 0), 0u)
      << s.message();
  EXPECT_FALSE(work.pending());
  s = coll_.Run(nullptr, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &ta, &ta);
  EXPECT_EQ(s.message(), "Collectives_Run: communicator is NULL");
  // The tensor checks every backend makes (backends/common/collective_call.h).
  MNT_Tensor bad = ta;
  bad.rank = MNT_MAX_RANK + 1;
  EXPECT_EQ(comm_->Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &bad, &ta).message(),
            "ALL_REDUCE: input has rank 7 (0 to 6)");
  bad = ta;
  bad.struct_size = 8;
  EXPECT_EQ(comm_->Run(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, &ta, &bad).message(),
            "ALL_GATHER: output struct_size 8 is smaller than the " +
                std::to_string(MNT_Tensor_STRUCT_SIZE) + " bytes of MNT_Tensor");
  bad = ta;
  bad.dims[0] = -8;
  EXPECT_EQ(comm_->Run(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, 0, &bad, &ta).message(),
            "BROADCAST: input dims[0] is -8");
  const MNT_Tensor shifted = MakeTensor(a.data() + 1, MNT_DTYPE_F32, {4});
  const MNT_Tensor front = MakeTensor(a.data(), MNT_DTYPE_F32, {4});
  EXPECT_EQ(comm_->Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &front, &shifted)
                .message(),
            "ALL_REDUCE: input and output overlap without being the same memory (in place is "
            "input data == output data)");
}

// ALL_GATHER and BROADCAST move any dtype's bytes, FP8 included.
TEST_F(CollectivesClientCpuTest, GathersMoveFp8Bytes) {
  std::vector<uint8_t> in(33), out(33, 0);
  std::mt19937 rng(std::random_device{}());
  for (uint8_t& b : in) b = static_cast<uint8_t>(rng());
  const MNT_Tensor tin = MakeTensor(in.data(), MNT_DTYPE_F8_E4M3, {33});
  const MNT_Tensor tout = MakeTensor(out.data(), MNT_DTYPE_F8_E4M3, {33});
  ASSERT_TRUE(comm_->Run(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, &tin, &tout).ok());
  EXPECT_EQ(out, in);
}

}  // namespace
}  // namespace mnt::sdk

// The cuda backend's collectives extension (mnt_collectives.h, over NCCL:
// collectives.h), through the plugin file as it ships.
//
//   - Everywhere (CI included, no device needed): the extension is on the
//     plugin's chain, version 2, with every call set (Collectives_Start and
//     Collectives_Wait too); calls with NULL handles and bad
//     Communicator_Create arguments are one-line errors, and a Start that
//     fails leaves its work NULL.
//   - One GPU, world size 1: every op is a copy, bit for bit (ALL_REDUCE
//     SUM/AVG/MAX, REDUCE_SCATTER, ALL_GATHER of any dtype, BROADCAST), the
//     in-place forms too; every bad call (rank/world, NULL buffers and
//     tensors, wrong sizes and dtypes, unknown op/reduce, root, memory the
//     backend did not allocate, overlaps, foreign or NULL communicators) is
//     one INVALID_ARGUMENT line and leaves the communicator usable; a
//     collective inside a marked step runs after the ops the step deferred
//     (and a step holding one is never replayed); one after a replayed step
//     sees its results; Communicator_Destroy with work in flight.
//     Started collectives (version 2): Start + Wait is the same bit exact
//     copy for every op; a count of 0 still gives a work; a bad Start is
//     one line with its work NULL; Wait refuses a NULL work, one already
//     waited for, another communicator's or a made-up one, and consumes a
//     live one even when it fails; works waited for in any order, the rest
//     freed by Communicator_Destroy; a Start inside a marked step runs
//     after the deferred ops and an op after the Wait sees its result.
//   - Two or more GPUs: one backend and one thread per GPU (NCCL blocks in
//     ncclCommInitRank until every rank joined), every op against a host
//     reference computed from the same inputs, then the whole sequence run
//     again for the same bits; an ALL_REDUCE gives every rank the same bits.
//     Tolerances (NCCL's reduction order is not rank order, and it adds
//     16-bit values in 16 bits, collectives.h): with S the sum over ranks of
//     |x| of one element, a SUM may differ from the float64 rank-order sum
//     by 1e-5 * S in fp32 and 1e-2 * S in bf16/fp16, an AVG by the same
//     bound over the world size; MAX, ALL_GATHER and BROADCAST are exact.
//     Started collectives: Start + Wait gives the same bits as Run for
//     every op; several in flight, waited for in reverse order, each give
//     their exact result; an op issued on the backend's stream after a
//     Wait sees the result, even though a peer starts its part only after
//     the host has issued that op; and Start returns before any peer has
//     started (the peers start only when rank 0's thread says its Start
//     returned; a Start that blocks the host fails on a bounded wait
//     instead of hanging). Each of these first runs its collective once
//     with Run on every rank: NCCL may connect to the peers from the host
//     at the first collective of a kind, which blocks until they call too.
//
// Skips, saying why, without a GPU (MNT_SKIP_WITHOUT_GPU: a GPU that is
// there but unusable fails), without NCCL (the plugin's own answer,
// FAILED_PRECONDITION "... NCCL is not available: ..."; a failure with
// MANTISSA_REQUIRE_NCCL=1), and the multi-GPU part with fewer than 2 GPUs.
// Any other error is a failure. A multi-GPU run that hangs (a rank stuck in
// NCCL) ends the binary after kWatchdogSeconds with the stage of each rank.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/abi/mnt_collectives.h"
#include "plugins/backends/common/tensor_access.h"
#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/collectives_client.h"
#include "plugins/sdk/extension_chain.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {
namespace {

constexpr size_t kNcclIdBytes = 128;  // sizeof(ncclUniqueId)
constexpr int kWatchdogSeconds = 180;

const MNT_Plugin_Api* Plugin() { return CudaBackendPluginApi(); }

sdk::Status S(MNT_Error* e) { return sdk::StatusFromPluginError(Plugin(), e); }

// The extension as a host finds it (sdk::CollectivesClient::Find, the
// loader's table rule), for `backend`; the binary stops without it.
sdk::CollectivesClient Coll(MNT_Backend* backend = nullptr) {
  static const sdk::CollectivesClient found = [] {
    sdk::CollectivesClient c;
    const sdk::Status s = sdk::CollectivesClient::Find(Plugin(), nullptr, &c);
    if (!s.ok()) {
      std::fprintf(stderr, "cuda_collectives_test: %s\n", s.message().c_str());
      std::abort();
    }
    return c;
  }();
  return found.WithBackend(backend);
}

const MNT_Collectives_Extension& Ext() { return *Coll().extension(); }

// ---------------------------------------------------------------- calls

sdk::Status GetUniqueId(MNT_Backend* backend, std::string* id) {
  return Coll(backend).GetUniqueId(id);
}

// *out is NULL unless the call succeeded (the client's rule).
sdk::Status CreateCommunicator(MNT_Backend* backend, int32_t rank, int32_t world,
                               const char* id, size_t id_size, MNT_Communicator** out) {
  return Coll(backend).CreateCommunicator(rank, world, id, id_size, out);
}

sdk::Status CreateCommunicator(MNT_Backend* backend, int32_t rank, int32_t world,
                               const std::string& id, MNT_Communicator** out) {
  return CreateCommunicator(backend, rank, world, id.data(), id.size(), out);
}

sdk::Status DestroyCommunicator(MNT_Backend* backend, MNT_Communicator* c) {
  return Coll(backend).DestroyCommunicator(c);
}

sdk::Status Collective(MNT_Backend* backend, MNT_Communicator* c, MNT_CollectiveOp op,
                       MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* in,
                       const MNT_Tensor* out) {
  return Coll(backend).Run(c, op, reduce, root, in, out);
}

// Collectives_Start, called directly (the client resets `work` itself): *work
// is what the call left in the args. It starts as a non-NULL sentinel, so a
// failed call that does not reset it shows.
sdk::Status StartCollective(MNT_Backend* backend, MNT_Communicator* c, MNT_CollectiveOp op,
                            MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* in,
                            const MNT_Tensor* out, MNT_CollectiveWork** work) {
  const sdk::CollectivesClient coll = Coll(backend);
  MNT_Collectives_Start_Args a = coll.StartArgs(c, op, reduce, root, in, out);
  a.work = reinterpret_cast<MNT_CollectiveWork*>(0x1);
  const sdk::Status s = coll.StatusOf(Ext().Collectives_Start(&a));
  *work = a.work;
  return s;
}

sdk::Status WaitCollective(MNT_Backend* backend, MNT_Communicator* c, MNT_CollectiveWork* work) {
  return Coll(backend).Wait(c, work);
}

MNT_Backend* CreateBackend(int32_t ordinal, const char* options = nullptr) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  a.options = options;
  a.device_ordinal = ordinal;
  const sdk::Status s = S(Plugin()->backend->Backend_Create(&a));
  EXPECT_TRUE(s.ok()) << "Backend_Create(cuda:" << ordinal << "): " << s.message();
  return s.ok() ? a.backend : nullptr;
}

void DestroyBackend(MNT_Backend* b) {
  if (b == nullptr) return;
  MNT_Backend_Destroy_Args a{};
  a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  a.backend = b;
  const sdk::Status s = S(Plugin()->backend->Backend_Destroy(&a));
  EXPECT_TRUE(s.ok()) << s.message();
}

// NCCL missing, as the plugin reports it; nothing else counts.
bool NcclMissing(const sdk::Status& s) {
  return s.code() == MNT_ERROR_FAILED_PRECONDITION &&
         s.message().find("NCCL is not available") != std::string::npos;
}

#define MNT_SKIP_WITHOUT_NCCL(status)                                                    \
  do {                                                                                   \
    const ::mnt::sdk::Status& mnt_nccl_status_ = (status);                               \
    if (NcclMissing(mnt_nccl_status_)) {                                                 \
      const char* mnt_require_ = std::getenv("MANTISSA_REQUIRE_NCCL");                   \
      if (mnt_require_ != nullptr && std::strcmp(mnt_require_, "1") == 0) {              \
        GTEST_FAIL() << "MANTISSA_REQUIRE_NCCL=1: " << mnt_nccl_status_.message();       \
      }                                                                                  \
      std::printf("SKIPPED: NCCL is not available (%s)\n",                               \
                  mnt_nccl_status_.message().c_str());                                   \
      GTEST_SKIP() << "NCCL is not available (" << mnt_nccl_status_.message() << ")";    \
    }                                                                                    \
  } while (0)

// An error expected: `code`, one line, containing `part`.
::testing::AssertionResult IsError(const sdk::Status& s, MNT_ErrorCode code,
                                   const std::string& part) {
  if (s.ok()) return ::testing::AssertionFailure() << "OK, expected an error with '" << part << "'";
  if (s.code() != code) {
    return ::testing::AssertionFailure() << "code " << s.code() << " (expected " << code
                                         << "): " << s.message();
  }
  if (s.message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << "'" << s.message() << "' lacks '" << part << "'";
  }
  if (s.message().find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "not one line: " << s.message();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsInvalid(const sdk::Status& s, const std::string& part) {
  return IsError(s, MNT_ERROR_INVALID_ARGUMENT, part);
}

#define MNT_ASSERT_OK(expr)                             \
  do {                                                  \
    const ::mnt::sdk::Status mnt_s_ = (expr);           \
    ASSERT_TRUE(mnt_s_.ok()) << #expr << ": " << mnt_s_.message(); \
  } while (0)
#define MNT_EXPECT_OK(expr)                             \
  do {                                                  \
    const ::mnt::sdk::Status mnt_s_ = (expr);           \
    EXPECT_TRUE(mnt_s_.ok()) << #expr << ": " << mnt_s_.message(); \
  } while (0)

// ---------------------------------------------------------------- host data

bool IsFloat(MNT_DType t) {
  return t == MNT_DTYPE_F32 || t == MNT_DTYPE_F16 || t == MNT_DTYPE_BF16;
}

const char* Name(MNT_DType t) { return sdk::DTypeName(t); }

// n random elements of `dtype` as bytes: N(0, 1) rounded to the dtype for
// float types, random bits otherwise.
std::vector<uint8_t> RandomBytes(std::mt19937* rng, MNT_DType dtype, int64_t n) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * sdk::DTypeSize(dtype));
  if (IsFloat(dtype)) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) StoreFromFloat(bytes.data(), dtype, i, dist(*rng));
  } else {
    std::uniform_int_distribution<int> dist(0, 255);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(dist(*rng));
  }
  return bytes;
}

std::vector<float> Floats(const std::vector<uint8_t>& bytes, MNT_DType dtype) {
  const size_t n = bytes.size() / sdk::DTypeSize(dtype);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = LoadAsFloat(bytes.data(), dtype, static_cast<int64_t>(i));
  return v;
}

// The first differing byte, or success.
::testing::AssertionResult SameBytes(const std::vector<uint8_t>& got,
                                     const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " bytes vs " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return ::testing::AssertionFailure()
             << "byte " << i << " of " << got.size() << ": 0x" << std::hex << int{got[i]}
             << " vs 0x" << int{want[i]};
    }
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------- CI part

TEST(CudaCollectivesTest, ExtensionIsOnThePluginChain) {
  const MNT_Extension_Header* h = sdk::FindExtension(Plugin(), MNT_EXTENSION_TYPE_COLLECTIVES);
  ASSERT_NE(h, nullptr) << "no MNT_EXTENSION_TYPE_COLLECTIVES on the cuda plugin's chain";
  EXPECT_GE(h->base.struct_size, MNT_Collectives_Extension_STRUCT_SIZE);
  ASSERT_NE(h->name, nullptr);
  EXPECT_STREQ(h->name, MNT_COLLECTIVES_EXTENSION_NAME);
  EXPECT_EQ(h->version, MNT_COLLECTIVES_EXTENSION_VERSION);
  const sdk::Status chain = sdk::CheckExtensionChain(Plugin());
  EXPECT_TRUE(chain.ok()) << chain.message();
  sdk::CollectivesClient coll;
  const sdk::Status found = sdk::CollectivesClient::Find(Plugin(), nullptr, &coll);
  ASSERT_TRUE(found.ok()) << found.message();
  EXPECT_TRUE(coll.starts());
  const MNT_Collectives_Extension* e = coll.extension();
  EXPECT_NE(e->Collectives_GetUniqueId, nullptr);
  EXPECT_NE(e->Communicator_Create, nullptr);
  EXPECT_NE(e->Communicator_Destroy, nullptr);
  EXPECT_NE(e->Collectives_Run, nullptr);
  // Version 2: started collectives.
  EXPECT_EQ(h->version, 2);
  EXPECT_EQ(h->base.struct_size, MNT_Collectives_Extension_STRUCT_SIZE);
  EXPECT_NE(e->Collectives_Start, nullptr);
  EXPECT_NE(e->Collectives_Wait, nullptr);
  // The capabilities extension comes first on the chain.
  EXPECT_NE(sdk::FindExtension(Plugin(), MNT_EXTENSION_TYPE_CAPABILITIES), nullptr);
}

// No device or NCCL needed: these fail (or succeed) before either is used.
TEST(CudaCollectivesTest, NullHandlesAndBadArgumentsAreOneLineErrors) {
  std::string id;
  EXPECT_TRUE(IsInvalid(GetUniqueId(nullptr, &id), "Collectives_GetUniqueId: backend is NULL"));
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_GetUniqueId(nullptr)), "args is NULL"));
  MNT_Collectives_GetUniqueId_Args short_args{};
  short_args.struct_size = 8;
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_GetUniqueId(&short_args)), "struct_size"));

  const std::string zeros(kNcclIdBytes, '\0');
  MNT_Communicator* c = nullptr;
  EXPECT_TRUE(IsInvalid(CreateCommunicator(nullptr, 0, 1, zeros, &c), "backend is NULL"));
  EXPECT_EQ(c, nullptr);
  EXPECT_TRUE(IsInvalid(CreateCommunicator(nullptr, 1, 1, zeros, &c), "rank 1 is outside [0, 1)"));
  EXPECT_EQ(c, nullptr);
  EXPECT_TRUE(IsInvalid(CreateCommunicator(nullptr, -1, 2, zeros, &c), "rank -1 is outside"));
  EXPECT_TRUE(IsInvalid(CreateCommunicator(nullptr, 0, 0, zeros, &c), "world_size is 0"));
  EXPECT_TRUE(IsInvalid(CreateCommunicator(nullptr, 0, 1, nullptr, kNcclIdBytes, &c),
                        "unique_id is NULL"));
  EXPECT_TRUE(IsInvalid(CreateCommunicator(nullptr, 0, 1, zeros.data(), 127, &c),
                        "unique_id_size is 127"));
  EXPECT_EQ(c, nullptr);

  // Destroy accepts NULL; Run needs a communicator.
  MNT_EXPECT_OK(DestroyCommunicator(nullptr, nullptr));
  float host[4] = {};
  int64_t dims[1] = {4};
  const MNT_Tensor t = sdk::MakeTensor(host, MNT_DTYPE_F32, 1, dims);
  EXPECT_TRUE(IsInvalid(Collective(nullptr, nullptr, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM,
                                   0, &t, &t),
                        "Collectives_Run: communicator is NULL"));
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_Run(nullptr)), "args is NULL"));

  // Start and Wait: the args, then the communicator, before any device.
  MNT_CollectiveWork* work = nullptr;
  EXPECT_TRUE(IsInvalid(StartCollective(nullptr, nullptr, MNT_COLLECTIVE_ALL_REDUCE,
                                        MNT_REDUCE_OP_SUM, 0, &t, &t, &work),
                        "Collectives_Start: communicator is NULL"));
  EXPECT_EQ(work, nullptr) << "a failed Start must leave its work NULL";
  alignas(16) char fake[256] = {};  // no communicator's magic
  auto* fake_comm = reinterpret_cast<MNT_Communicator*>(fake);
  EXPECT_TRUE(IsInvalid(StartCollective(nullptr, fake_comm, MNT_COLLECTIVE_ALL_GATHER,
                                        MNT_REDUCE_OP_INVALID, 0, &t, &t, &work),
                        "Collectives_Start: communicator is not a live communicator"));
  EXPECT_EQ(work, nullptr);
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_Start(nullptr)), "args is NULL"));
  MNT_Collectives_Start_Args short_start{};
  short_start.struct_size = MNT_Collectives_Run_Args_STRUCT_SIZE;  // Run's is shorter
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_Start(&short_start)), "struct_size"));

  alignas(16) char fake_work[64] = {};
  auto* made_up = reinterpret_cast<MNT_CollectiveWork*>(fake_work);
  EXPECT_TRUE(IsInvalid(WaitCollective(nullptr, nullptr, made_up),
                        "Collectives_Wait: communicator is NULL"));
  EXPECT_TRUE(IsInvalid(WaitCollective(nullptr, nullptr, nullptr),
                        "Collectives_Wait: communicator is NULL"));
  EXPECT_TRUE(IsInvalid(WaitCollective(nullptr, fake_comm, made_up),
                        "Collectives_Wait: communicator is not a live communicator"));
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_Wait(nullptr)), "args is NULL"));
  MNT_Collectives_Wait_Args short_wait{};
  short_wait.struct_size = 8;
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_Wait(&short_wait)), "struct_size"));
}

// ---------------------------------------------------------------- world size 1

class CudaCollectivesWorld1Test : public ::testing::Test {
 protected:
  void SetUp() override {
    MNT_SKIP_WITHOUT_GPU();
    backend_ = CreateBackend(0, options());
    ASSERT_NE(backend_, nullptr);
    client_ = std::make_unique<sdk::BackendClient>(Plugin(), backend_);
    std::string id;
    const sdk::Status s = GetUniqueId(backend_, &id);
    MNT_SKIP_WITHOUT_NCCL(s);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(id.size(), kNcclIdBytes);
    MNT_ASSERT_OK(CreateCommunicator(backend_, 0, 1, id, &comm_));
    ASSERT_NE(comm_, nullptr);
  }

  void TearDown() override {
    if (comm_ != nullptr) MNT_EXPECT_OK(DestroyCommunicator(backend_, comm_));
    client_.reset();
    DestroyBackend(backend_);
  }

  virtual const char* options() const { return nullptr; }

  sdk::DeviceBuffer Alloc(size_t bytes) {
    sdk::DeviceBuffer b;
    const sdk::Status s = client_->Allocate(bytes, MNT_MEMORY_DATA, &b);
    EXPECT_TRUE(s.ok()) << s.message();
    return b;
  }
  // A device copy of `bytes`.
  sdk::DeviceBuffer Device(const std::vector<uint8_t>& bytes) {
    sdk::DeviceBuffer b = Alloc(bytes.size());
    Put(b.data(), bytes);
    return b;
  }
  void Put(void* dst, const std::vector<uint8_t>& bytes) {
    const sdk::Status s = client_->ToDevice(dst, bytes.data(), bytes.size());
    EXPECT_TRUE(s.ok()) << s.message();
  }
  // `bytes` of 0xFF (NaN in every float dtype): shows what was not written.
  sdk::DeviceBuffer Poisoned(size_t bytes) { return Device(std::vector<uint8_t>(bytes, 0xFF)); }
  std::vector<uint8_t> Get(const void* src, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    MNT_EXPECT_OK(client_->Synchronize());
    const sdk::Status s = client_->ToHost(out.data(), src, bytes);
    EXPECT_TRUE(s.ok()) << s.message();
    return out;
  }
  sdk::Status Run(MNT_CollectiveOp op, MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* in,
                  const MNT_Tensor* out) {
    return Collective(backend_, comm_, op, reduce, root, in, out);
  }
  sdk::Status Start(MNT_CollectiveOp op, MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* in,
                    const MNT_Tensor* out, MNT_CollectiveWork** work) {
    return StartCollective(backend_, comm_, op, reduce, root, in, out, work);
  }
  sdk::Status Wait(MNT_CollectiveWork* work) { return WaitCollective(backend_, comm_, work); }

  MNT_Backend* backend_ = nullptr;
  std::unique_ptr<sdk::BackendClient> client_;
  MNT_Communicator* comm_ = nullptr;
  std::mt19937 rng_{12345};
};

struct OpCase {
  MNT_CollectiveOp op;
  MNT_ReduceOp reduce;
  const char* name;
};
const OpCase kEveryOp[] = {
    {MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, "ALL_REDUCE SUM"},
    {MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, "ALL_REDUCE AVG"},
    {MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_MAX, "ALL_REDUCE MAX"},
    {MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_SUM, "REDUCE_SCATTER SUM"},
    {MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_AVG, "REDUCE_SCATTER AVG"},
    {MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_MAX, "REDUCE_SCATTER MAX"},
    {MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, "ALL_GATHER"},
    {MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, "BROADCAST"},
};

TEST_F(CudaCollectivesWorld1Test, EveryOpIsABitExactCopy) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16, MNT_DTYPE_I32,
                          MNT_DTYPE_U8, MNT_DTYPE_F64}) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{65537}}) {
      const std::vector<uint8_t> x = RandomBytes(&rng_, dtype, n);
      sdk::DeviceBuffer in = Device(x);
      for (const OpCase& c : kEveryOp) {
        const bool reduction =
            c.op == MNT_COLLECTIVE_ALL_REDUCE || c.op == MNT_COLLECTIVE_REDUCE_SCATTER;
        if (reduction && !IsFloat(dtype)) continue;
        SCOPED_TRACE(std::string(c.name) + " " + Name(dtype) + "[" + std::to_string(n) + "]");
        sdk::DeviceBuffer out = Poisoned(x.size());
        const int64_t in_dims[2] = {n, 1};  // shapes may differ; element counts follow the op
        const int64_t out_dims[1] = {n};
        const MNT_Tensor ti = sdk::MakeTensor(in.data(), dtype, 2, in_dims);
        const MNT_Tensor to = sdk::MakeTensor(out.data(), dtype, 1, out_dims);
        MNT_ASSERT_OK(Run(c.op, c.reduce, 0, &ti, &to));
        EXPECT_TRUE(SameBytes(Get(out.data(), x.size()), x));
      }
      EXPECT_TRUE(SameBytes(Get(in.data(), x.size()), x)) << "the input was written";
    }
  }
}

TEST_F(CudaCollectivesWorld1Test, ZeroElementsIsANoOp) {
  sdk::DeviceBuffer buf = Alloc(16);
  const int64_t dims[1] = {0};
  const MNT_Tensor t = sdk::MakeTensor(buf.data(), MNT_DTYPE_F32, 1, dims);
  sdk::DeviceBuffer other = Alloc(16);
  const MNT_Tensor u = sdk::MakeTensor(other.data(), MNT_DTYPE_F32, 1, dims);
  for (const OpCase& c : kEveryOp) {
    SCOPED_TRACE(c.name);
    MNT_EXPECT_OK(Run(c.op, c.reduce, 0, &t, &u));
  }
}

TEST_F(CudaCollectivesWorld1Test, InPlaceForms) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    const int64_t n = 4099;
    const std::vector<uint8_t> x = RandomBytes(&rng_, dtype, n);
    sdk::DeviceBuffer buf = Device(x);
    const int64_t dims[1] = {n};
    const MNT_Tensor t = sdk::MakeTensor(buf.data(), dtype, 1, dims);
    for (MNT_ReduceOp r : {MNT_REDUCE_OP_SUM, MNT_REDUCE_OP_AVG, MNT_REDUCE_OP_MAX}) {
      SCOPED_TRACE(std::string("ALL_REDUCE in place ") + Name(dtype) + " reduce " +
                   std::to_string(r));
      MNT_ASSERT_OK(Run(MNT_COLLECTIVE_ALL_REDUCE, r, 0, &t, &t));
      EXPECT_TRUE(SameBytes(Get(buf.data(), x.size()), x));
    }
    // ALL_GATHER: rank 0's chunk of the output is the output's start.
    MNT_ASSERT_OK(Run(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, &t, &t));
    EXPECT_TRUE(SameBytes(Get(buf.data(), x.size()), x)) << "ALL_GATHER in place";
    MNT_ASSERT_OK(Run(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, 0, &t, &t));
    EXPECT_TRUE(SameBytes(Get(buf.data(), x.size()), x)) << "BROADCAST in place";
  }
}

TEST_F(CudaCollectivesWorld1Test, BadCallsAreOneLineErrorsAndLeaveTheCommunicatorUsable) {
  const int64_t n = 64;
  const std::vector<uint8_t> x = RandomBytes(&rng_, MNT_DTYPE_F32, n);
  sdk::DeviceBuffer a = Device(x), b = Poisoned(x.size()), big = Poisoned(2 * x.size());
  const int64_t dn[1] = {n}, dn1[1] = {n - 1}, dn2[1] = {n + 1}, dneg[1] = {-1};
  const MNT_Tensor ta = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tb = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tb_short = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dn1);
  const MNT_Tensor tbig_long = sdk::MakeTensor(big.data(), MNT_DTYPE_F32, 1, dn2);
  const MNT_Tensor tb_f16 = sdk::MakeTensor(b.data(), MNT_DTYPE_F16, 1, dn);
  const MNT_Tensor ta_i32 = sdk::MakeTensor(a.data(), MNT_DTYPE_I32, 1, dn);
  const MNT_Tensor tb_i32 = sdk::MakeTensor(b.data(), MNT_DTYPE_I32, 1, dn);
  const MNT_Tensor tb_neg = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dneg);
  const MNT_Tensor null_data = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, 1, dn);
  std::vector<float> host(n);
  const MNT_Tensor t_host = sdk::MakeTensor(host.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor ta_shifted =  // overlaps a without being it
      sdk::MakeTensor(static_cast<char*>(big.data()) + 4, MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tbig_first = sdk::MakeTensor(big.data(), MNT_DTYPE_F32, 1, dn);
  const auto AR = MNT_COLLECTIVE_ALL_REDUCE;
  const auto RS = MNT_COLLECTIVE_REDUCE_SCATTER;
  const auto AG = MNT_COLLECTIVE_ALL_GATHER;
  const auto BC = MNT_COLLECTIVE_BROADCAST;
  const auto SUM = MNT_REDUCE_OP_SUM;
  const auto NONE = MNT_REDUCE_OP_INVALID;

  // Unknown op and reduce.
  EXPECT_TRUE(IsInvalid(Run(MNT_COLLECTIVE_INVALID, SUM, 0, &ta, &tb), "unknown collective op 0"));
  EXPECT_TRUE(IsInvalid(Run(static_cast<MNT_CollectiveOp>(99), SUM, 0, &ta, &tb),
                        "unknown collective op 99"));
  EXPECT_TRUE(IsInvalid(Run(AR, MNT_REDUCE_OP_INVALID, 0, &ta, &tb),
                        "ALL_REDUCE: unknown reduce op 0"));
  EXPECT_TRUE(IsInvalid(Run(RS, static_cast<MNT_ReduceOp>(7), 0, &ta, &tb),
                        "REDUCE_SCATTER: unknown reduce op 7"));
  // NULL tensors and data.
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta, nullptr), "ALL_REDUCE: output is NULL"));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, nullptr, &tb), "ALL_REDUCE: input is NULL"));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &null_data, &tb), "ALL_REDUCE: input has NULL data"));
  EXPECT_TRUE(IsInvalid(Run(AG, NONE, 0, &ta, &null_data), "ALL_GATHER: output has NULL data"));
  // The root reads its input.
  EXPECT_TRUE(IsInvalid(Run(BC, NONE, 0, nullptr, &tb), "BROADCAST: input is NULL"));
  // Sizes, dtypes, dims.
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta, &tb_short), "one element count for both"));
  EXPECT_TRUE(IsInvalid(Run(RS, SUM, 0, &ta, &tb_short), "expected world size 1 x output's 63"));
  EXPECT_TRUE(IsInvalid(Run(AG, NONE, 0, &ta, &tbig_long), "expected world size 1 x input's 64"));
  EXPECT_TRUE(IsInvalid(Run(BC, NONE, 0, &ta, &tb_short), "one element count for both"));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta, &tb_f16), "one dtype for both"));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta_i32, &tb_i32), "reductions take F32, F16 or BF16"));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta, &tb_neg), "output dims[0] is -1"));
  // BROADCAST's root.
  EXPECT_TRUE(IsInvalid(Run(BC, NONE, 1, &ta, &tb), "BROADCAST: root 1 is outside [0, 1)"));
  EXPECT_TRUE(IsInvalid(Run(BC, NONE, -1, &ta, &tb), "BROADCAST: root -1 is outside [0, 1)"));
  // Memory the backend did not allocate, and past an allocation's end.
  const std::string foreign = "not inside memory allocated by this backend";
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &t_host, &tb), "ALL_REDUCE: input "));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &t_host, &tb), foreign));
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta, &t_host), foreign));
  const int64_t dpast[1] = {n + 1};
  const MNT_Tensor ta_past = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, dpast);
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta_past, &tbig_long), "not inside memory allocated"));
  // Overlaps other than the in-place forms.
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &tbig_first, &ta_shifted), "overlap"));
  EXPECT_TRUE(IsInvalid(Run(RS, SUM, 0, &ta, &ta), "REDUCE_SCATTER does not run in place"));
  EXPECT_TRUE(IsInvalid(Run(AG, NONE, 0, &ta_shifted, &tbig_first), "own chunk"));
  // Struct sizes.
  MNT_Collectives_Run_Args short_run{};
  short_run.struct_size = 8;
  EXPECT_TRUE(IsInvalid(S(Ext().Collectives_Run(&short_run)), "struct_size"));
  MNT_Tensor short_tensor = tb;
  short_tensor.struct_size = 8;
  EXPECT_TRUE(IsInvalid(Run(AR, SUM, 0, &ta, &short_tensor), "output struct_size 8"));
  // Communicators: NULL, not one, another instance's.
  EXPECT_TRUE(IsInvalid(Collective(backend_, nullptr, AR, SUM, 0, &ta, &tb),
                        "communicator is NULL"));
  alignas(16) char fake[256] = {};
  EXPECT_TRUE(IsInvalid(Collective(backend_, reinterpret_cast<MNT_Communicator*>(fake), AR, SUM,
                                   0, &ta, &tb),
                        "not a live communicator of the cuda backend"));
  MNT_Backend* other = CreateBackend(0);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(IsInvalid(Collective(other, comm_, AR, SUM, 0, &ta, &tb),
                        "belongs to another backend instance"));
  EXPECT_TRUE(IsInvalid(DestroyCommunicator(other, comm_), "belongs to another backend instance"));
  EXPECT_TRUE(IsInvalid(Collective(nullptr, comm_, AR, SUM, 0, &ta, &tb),
                        "belongs to another backend instance"));
  DestroyBackend(other);
  // Communicator_Create with a backend: the same checks as without one.
  std::string id;
  MNT_ASSERT_OK(GetUniqueId(backend_, &id));
  MNT_Communicator* c = nullptr;
  EXPECT_TRUE(IsInvalid(CreateCommunicator(backend_, 1, 1, id, &c), "rank 1 is outside [0, 1)"));
  EXPECT_EQ(c, nullptr);
  EXPECT_TRUE(IsInvalid(CreateCommunicator(backend_, 0, 0, id, &c), "world_size is 0"));
  EXPECT_TRUE(IsInvalid(CreateCommunicator(backend_, 0, 1, id.data(), id.size() - 1, &c),
                        "unique_id_size is 127"));
  EXPECT_TRUE(IsInvalid(CreateCommunicator(backend_, 0, 1, nullptr, id.size(), &c),
                        "unique_id is NULL"));
  EXPECT_EQ(c, nullptr);

  // Nothing above was issued: the output is untouched, and the
  // communicator still works.
  EXPECT_TRUE(SameBytes(Get(b.data(), x.size()), std::vector<uint8_t>(x.size(), 0xFF)));
  MNT_ASSERT_OK(Run(AR, SUM, 0, &ta, &tb));
  EXPECT_TRUE(SameBytes(Get(b.data(), x.size()), x));
}

// Two communicators on one backend, and a fresh one after Destroy.
TEST_F(CudaCollectivesWorld1Test, SeveralCommunicatorsAndDestroyWithWorkInFlight) {
  std::string id;
  MNT_ASSERT_OK(GetUniqueId(backend_, &id));
  MNT_Communicator* second = nullptr;
  MNT_ASSERT_OK(CreateCommunicator(backend_, 0, 1, id, &second));
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, comm_);
  // 64 MiB: still running when Destroy is called.
  const int64_t n = int64_t{16} << 20;
  const std::vector<uint8_t> x = RandomBytes(&rng_, MNT_DTYPE_F32, n);
  sdk::DeviceBuffer in = Device(x), out = Poisoned(x.size()), out2 = Poisoned(x.size());
  const int64_t dims[1] = {n};
  const MNT_Tensor ti = sdk::MakeTensor(in.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor to = sdk::MakeTensor(out.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor to2 = sdk::MakeTensor(out2.data(), MNT_DTYPE_F32, 1, dims);
  MNT_ASSERT_OK(Collective(backend_, second, MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0,
                           &ti, &to));
  MNT_ASSERT_OK(Collective(backend_, comm_, MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0,
                           &ti, &to2));
  MNT_ASSERT_OK(DestroyCommunicator(backend_, second));
  MNT_ASSERT_OK(DestroyCommunicator(backend_, comm_));
  comm_ = nullptr;
  EXPECT_TRUE(SameBytes(Get(out.data(), x.size()), x));
  EXPECT_TRUE(SameBytes(Get(out2.data(), x.size()), x));
  // A new communicator after both were destroyed.
  MNT_ASSERT_OK(GetUniqueId(backend_, &id));
  MNT_ASSERT_OK(CreateCommunicator(backend_, 0, 1, id, &comm_));
  sdk::DeviceBuffer out3 = Poisoned(x.size());
  const MNT_Tensor to3 = sdk::MakeTensor(out3.data(), MNT_DTYPE_F32, 1, dims);
  MNT_ASSERT_OK(Run(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, 0, &ti, &to3));
  EXPECT_TRUE(SameBytes(Get(out3.data(), x.size()), x));
}

// Default options: cuda_graphs=on, so a marked step's ops are deferred
// until StepEnd (common/step_session.h) unless something flushes them.
class CudaCollectivesStepTest : public CudaCollectivesWorld1Test {};

sdk::Status Fill(const sdk::BackendClient& c, const MNT_Tensor& t, double value) {
  MNT_FillParams p{};
  p.struct_size = MNT_FillParams_STRUCT_SIZE;
  p.value = value;
  return c.Run(MNT_OP_FILL, {}, {t}, &p);
}

std::vector<uint8_t> F32Bytes(int64_t n, float v) {
  std::vector<uint8_t> b(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) std::memcpy(b.data() + 4 * i, &v, 4);
  return b;
}

TEST_F(CudaCollectivesStepTest, CollectiveInsideAStepRunsAfterTheDeferredOps) {
  ASSERT_TRUE(client_->HasStepMarkers());
  const int64_t n = 100003;
  const size_t bytes = static_cast<size_t>(n) * 4;
  sdk::DeviceBuffer x = Alloc(bytes), x2 = Alloc(bytes), y = Alloc(bytes), z = Alloc(bytes);
  const int64_t dims[1] = {n};
  const MNT_Tensor tx = sdk::MakeTensor(x.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor tx2 = sdk::MakeTensor(x2.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor ty = sdk::MakeTensor(y.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor tz = sdk::MakeTensor(z.data(), MNT_DTYPE_F32, 1, dims);
  // Three equal steps: without the collective the third would replay.
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Put(x.data(), F32Bytes(n, 0.0f));
    Put(x2.data(), F32Bytes(n, 0.0f));
    Put(y.data(), std::vector<uint8_t>(bytes, 0xFF));
    Put(z.data(), std::vector<uint8_t>(bytes, 0xFF));
    MNT_ASSERT_OK(client_->StepBegin());
    MNT_ASSERT_OK(Fill(*client_, tx, 5.0));  // deferred
    MNT_ASSERT_OK(client_->Copy(x2.data(), x.data(), bytes, MNT_COPY_DEVICE_TO_DEVICE));
    MNT_ASSERT_OK(Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx2, &ty));
    MNT_ASSERT_OK(Fill(*client_, tx, 7.0));  // after the collective
    MNT_ASSERT_OK(Run(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, 0, &tx, &tz));
    bool replayed = true;
    MNT_ASSERT_OK(client_->StepEnd(&replayed));
    EXPECT_FALSE(replayed) << "a step holding a collective must not be replayed";
    EXPECT_TRUE(SameBytes(Get(y.data(), bytes), F32Bytes(n, 5.0f)))
        << "the ALL_REDUCE did not see the step's FILL and copy issued before it";
    EXPECT_TRUE(SameBytes(Get(z.data(), bytes), F32Bytes(n, 7.0f)))
        << "the BROADCAST did not see the FILL issued between the collectives";
    EXPECT_TRUE(SameBytes(Get(x.data(), bytes), F32Bytes(n, 7.0f)));
  }
}

TEST_F(CudaCollectivesStepTest, CollectiveAfterAReplayedStepSeesItsResults) {
  const int64_t n = 4096;
  const size_t bytes = static_cast<size_t>(n) * 4;
  sdk::DeviceBuffer x = Alloc(bytes), y = Alloc(bytes);
  const int64_t dims[1] = {n};
  const MNT_Tensor tx = sdk::MakeTensor(x.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor ty = sdk::MakeTensor(y.data(), MNT_DTYPE_F32, 1, dims);
  int replays = 0;
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Put(x.data(), F32Bytes(n, 0.0f));
    Put(y.data(), std::vector<uint8_t>(bytes, 0xFF));
    MNT_ASSERT_OK(client_->StepBegin());
    MNT_ASSERT_OK(Fill(*client_, tx, 3.0));
    bool replayed = false;
    MNT_ASSERT_OK(client_->StepEnd(&replayed));
    replays += replayed ? 1 : 0;
    MNT_ASSERT_OK(Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_MAX, 0, &tx, &ty));
    EXPECT_TRUE(SameBytes(Get(y.data(), bytes), F32Bytes(n, 3.0f)));
  }
  std::printf("%d of 4 steps replayed from a CUDA graph before the collective\n", replays);
}

// ---------------------------------------------------------------- started, world size 1

sdk::Status Add(const sdk::BackendClient& c, const MNT_Tensor& in, const MNT_Tensor& out,
                float alpha) {
  MNT_AddParams p{};
  p.struct_size = MNT_AddParams_STRUCT_SIZE;
  p.alpha = alpha;
  p.beta = 0.0f;
  return c.Run(MNT_OP_ADD, {in}, {out}, &p);
}

TEST_F(CudaCollectivesWorld1Test, StartAndWaitIsABitExactCopy) {
  for (MNT_DType dtype : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_I32}) {
    for (int64_t n : {int64_t{1}, int64_t{65537}}) {
      const std::vector<uint8_t> x = RandomBytes(&rng_, dtype, n);
      sdk::DeviceBuffer in = Device(x);
      for (const OpCase& c : kEveryOp) {
        const bool reduction =
            c.op == MNT_COLLECTIVE_ALL_REDUCE || c.op == MNT_COLLECTIVE_REDUCE_SCATTER;
        if (reduction && !IsFloat(dtype)) continue;
        SCOPED_TRACE(std::string(c.name) + " " + Name(dtype) + "[" + std::to_string(n) + "]");
        sdk::DeviceBuffer out = Poisoned(x.size());
        const int64_t dims[1] = {n};
        const MNT_Tensor ti = sdk::MakeTensor(in.data(), dtype, 1, dims);
        const MNT_Tensor to = sdk::MakeTensor(out.data(), dtype, 1, dims);
        MNT_CollectiveWork* work = nullptr;
        MNT_ASSERT_OK(Start(c.op, c.reduce, 0, &ti, &to, &work));
        ASSERT_NE(work, nullptr);
        MNT_ASSERT_OK(Wait(work));
        EXPECT_TRUE(SameBytes(Get(out.data(), x.size()), x));
      }
      EXPECT_TRUE(SameBytes(Get(in.data(), x.size()), x)) << "the input was written";
    }
  }
}

TEST_F(CudaCollectivesWorld1Test, ZeroElementsStillGiveAWork) {
  sdk::DeviceBuffer buf = Alloc(16), other = Alloc(16);
  const int64_t dims[1] = {0};
  const MNT_Tensor t = sdk::MakeTensor(buf.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor u = sdk::MakeTensor(other.data(), MNT_DTYPE_F32, 1, dims);
  std::vector<MNT_CollectiveWork*> works;
  for (const OpCase& c : kEveryOp) {
    SCOPED_TRACE(c.name);
    MNT_CollectiveWork* work = nullptr;
    MNT_ASSERT_OK(Start(c.op, c.reduce, 0, &t, &u, &work));
    ASSERT_NE(work, nullptr);
    works.push_back(work);
  }
  for (MNT_CollectiveWork* w : works) MNT_EXPECT_OK(Wait(w));
}

TEST_F(CudaCollectivesWorld1Test, BadStartsAreOneLineErrorsWithNoWork) {
  const int64_t n = 64;
  const std::vector<uint8_t> x = RandomBytes(&rng_, MNT_DTYPE_F32, n);
  sdk::DeviceBuffer a = Device(x), b = Poisoned(x.size());
  const int64_t dn[1] = {n}, dn1[1] = {n - 1};
  const MNT_Tensor ta = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tb = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tb_short = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dn1);
  std::vector<float> host(n);
  const MNT_Tensor t_host = sdk::MakeTensor(host.data(), MNT_DTYPE_F32, 1, dn);
  const auto AR = MNT_COLLECTIVE_ALL_REDUCE;
  const auto SUM = MNT_REDUCE_OP_SUM;
  MNT_CollectiveWork* work = nullptr;
  const auto expect_bad = [&](const sdk::Status& s, const std::string& part) {
    EXPECT_TRUE(IsInvalid(s, part));
    EXPECT_EQ(work, nullptr) << part;
  };
  expect_bad(Start(static_cast<MNT_CollectiveOp>(99), SUM, 0, &ta, &tb, &work),
             "Collectives_Start: unknown collective op 99");
  expect_bad(Start(AR, MNT_REDUCE_OP_INVALID, 0, &ta, &tb, &work),
             "ALL_REDUCE: unknown reduce op 0");
  expect_bad(Start(AR, SUM, 0, &ta, nullptr, &work), "ALL_REDUCE: output is NULL");
  expect_bad(Start(AR, SUM, 0, &ta, &tb_short, &work), "one element count for both");
  expect_bad(Start(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, 1, &ta, &tb, &work),
             "BROADCAST: root 1 is outside [0, 1)");
  expect_bad(Start(AR, SUM, 0, &t_host, &tb, &work),
             "not inside memory allocated by this backend");
  expect_bad(StartCollective(backend_, nullptr, AR, SUM, 0, &ta, &tb, &work),
             "Collectives_Start: communicator is NULL");
  MNT_Backend* other = CreateBackend(0);
  ASSERT_NE(other, nullptr);
  expect_bad(StartCollective(other, comm_, AR, SUM, 0, &ta, &tb, &work),
             "belongs to another backend instance");
  DestroyBackend(other);
  // Nothing was issued, and the communicator still works.
  EXPECT_TRUE(SameBytes(Get(b.data(), x.size()), std::vector<uint8_t>(x.size(), 0xFF)));
  MNT_ASSERT_OK(Start(AR, SUM, 0, &ta, &tb, &work));
  MNT_ASSERT_OK(Wait(work));
  EXPECT_TRUE(SameBytes(Get(b.data(), x.size()), x));
}

TEST_F(CudaCollectivesWorld1Test, WaitChecksItsWorkAndConsumesALiveOne) {
  const int64_t n = 4096;
  const std::vector<uint8_t> x = RandomBytes(&rng_, MNT_DTYPE_F32, n);
  sdk::DeviceBuffer a = Device(x), b = Poisoned(x.size()), c = Poisoned(x.size());
  const int64_t dn[1] = {n};
  const MNT_Tensor ta = sdk::MakeTensor(a.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tb = sdk::MakeTensor(b.data(), MNT_DTYPE_F32, 1, dn);
  const MNT_Tensor tc = sdk::MakeTensor(c.data(), MNT_DTYPE_F32, 1, dn);
  const auto AR = MNT_COLLECTIVE_ALL_REDUCE;
  const auto SUM = MNT_REDUCE_OP_SUM;

  EXPECT_TRUE(IsInvalid(Wait(nullptr), "Collectives_Wait: work is NULL"));
  alignas(16) char fake[64] = {};
  EXPECT_TRUE(IsInvalid(Wait(reinterpret_cast<MNT_CollectiveWork*>(fake)),
                        "not a started collective of the cuda backend still to be waited for"));

  // Waited for twice: the second finds nothing (the work was freed).
  MNT_CollectiveWork* work = nullptr;
  MNT_ASSERT_OK(Start(AR, SUM, 0, &ta, &tb, &work));
  MNT_ASSERT_OK(Wait(work));
  EXPECT_TRUE(IsInvalid(Wait(work), "each work is waited for once"));
  EXPECT_TRUE(SameBytes(Get(b.data(), x.size()), x));

  // Another communicator's work: refused, left live, then waited for there.
  std::string id;
  MNT_ASSERT_OK(GetUniqueId(backend_, &id));
  MNT_Communicator* second = nullptr;
  MNT_ASSERT_OK(CreateCommunicator(backend_, 0, 1, id, &second));
  MNT_CollectiveWork* theirs = nullptr;
  MNT_ASSERT_OK(StartCollective(backend_, second, AR, SUM, 0, &ta, &tc, &theirs));
  EXPECT_TRUE(IsInvalid(Wait(theirs), "the work was started on another communicator"));
  MNT_EXPECT_OK(WaitCollective(backend_, second, theirs));
  EXPECT_TRUE(SameBytes(Get(c.data(), x.size()), x));
  MNT_ASSERT_OK(DestroyCommunicator(backend_, second));

  // The right communicator with another backend: an error, and the work is
  // consumed all the same (mnt_collectives.h).
  MNT_ASSERT_OK(Start(AR, SUM, 0, &ta, &tb, &work));
  MNT_Backend* other = CreateBackend(0);
  ASSERT_NE(other, nullptr);
  const sdk::Status wrong = WaitCollective(other, comm_, work);
  EXPECT_TRUE(IsInvalid(wrong, "belongs to another backend instance"));
  EXPECT_TRUE(IsInvalid(wrong, "the work is consumed"));
  DestroyBackend(other);
  EXPECT_TRUE(IsInvalid(Wait(work), "each work is waited for once"));
  // That Wait did not order this backend's stream; a Run does (it follows
  // every earlier collective of the communicator on the NCCL stream).
  MNT_ASSERT_OK(Run(AR, SUM, 0, &ta, &tc));
  EXPECT_TRUE(SameBytes(Get(b.data(), x.size()), x));
}

// Several works in flight, waited for out of order; the ones never waited
// for are freed by Communicator_Destroy, which waits for their collectives.
TEST_F(CudaCollectivesWorld1Test, WaitsInAnyOrderAndDestroyFreesTheRest) {
  const int64_t n = int64_t{1} << 20;
  const size_t bytes = static_cast<size_t>(n) * 4;
  const int kWorks = 6;
  std::vector<std::vector<uint8_t>> x;
  std::vector<sdk::DeviceBuffer> in, out;
  std::vector<MNT_Tensor> ti, to;
  const int64_t dims[1] = {n};
  for (int i = 0; i < kWorks; ++i) {
    x.push_back(RandomBytes(&rng_, MNT_DTYPE_F32, n));
    in.push_back(Device(x.back()));
    out.push_back(Poisoned(bytes));
    ti.push_back(sdk::MakeTensor(in.back().data(), MNT_DTYPE_F32, 1, dims));
    to.push_back(sdk::MakeTensor(out.back().data(), MNT_DTYPE_F32, 1, dims));
  }
  for (int round = 0; round < 3; ++round) {  // later rounds reuse the events
    SCOPED_TRACE("round " + std::to_string(round));
    for (int i = 0; i < kWorks; ++i) Put(out[i].data(), std::vector<uint8_t>(bytes, 0xFF));
    std::vector<MNT_CollectiveWork*> works(kWorks);
    for (int i = 0; i < kWorks; ++i) {
      const OpCase& c = kEveryOp[i % (sizeof(kEveryOp) / sizeof(kEveryOp[0]))];
      MNT_ASSERT_OK(Start(c.op, c.reduce, 0, &ti[i], &to[i], &works[i]));
    }
    for (int i : {5, 0, 3, 2, 4, 1}) MNT_ASSERT_OK(Wait(works[i]));
    for (int i = 0; i < kWorks; ++i) EXPECT_TRUE(SameBytes(Get(out[i].data(), bytes), x[i])) << i;
  }
  // Three left in flight for Destroy.
  for (int i = 0; i < kWorks; ++i) Put(out[i].data(), std::vector<uint8_t>(bytes, 0xFF));
  std::vector<MNT_CollectiveWork*> works(kWorks);
  for (int i = 0; i < kWorks; ++i) {
    MNT_ASSERT_OK(Start(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, &ti[i], &to[i],
                        &works[i]));
  }
  MNT_ASSERT_OK(Wait(works[4]));
  MNT_ASSERT_OK(Wait(works[1]));
  MNT_ASSERT_OK(Wait(works[2]));
  MNT_ASSERT_OK(DestroyCommunicator(backend_, comm_));
  comm_ = nullptr;
  for (int i = 0; i < kWorks; ++i) EXPECT_TRUE(SameBytes(Get(out[i].data(), bytes), x[i])) << i;
}

TEST_F(CudaCollectivesStepTest, StartInsideAStepRunsAfterTheDeferredOpsAndWaitOrdersLaterOps) {
  ASSERT_TRUE(client_->HasStepMarkers());
  const int64_t n = int64_t{4} << 20;  // 16 MiB: a copy that takes a while
  const size_t bytes = static_cast<size_t>(n) * 4;
  sdk::DeviceBuffer x = Alloc(bytes), y = Alloc(bytes), z = Alloc(bytes), w = Alloc(bytes);
  const int64_t dims[1] = {n};
  const MNT_Tensor tx = sdk::MakeTensor(x.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor ty = sdk::MakeTensor(y.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor tz = sdk::MakeTensor(z.data(), MNT_DTYPE_F32, 1, dims);
  const MNT_Tensor tw = sdk::MakeTensor(w.data(), MNT_DTYPE_F32, 1, dims);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Put(x.data(), F32Bytes(n, 0.0f));
    Put(y.data(), std::vector<uint8_t>(bytes, 0xFF));
    Put(w.data(), std::vector<uint8_t>(bytes, 0xFF));
    MNT_ASSERT_OK(client_->StepBegin());
    MNT_ASSERT_OK(Fill(*client_, tx, 5.0));  // deferred
    MNT_CollectiveWork* work = nullptr;
    MNT_ASSERT_OK(Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx, &ty, &work));
    MNT_ASSERT_OK(Fill(*client_, tz, 3.0));  // may overlap the collective: touches neither
    MNT_ASSERT_OK(Wait(work));
    MNT_ASSERT_OK(Add(*client_, ty, tw, 2.0f));  // reads the collective's output
    bool replayed = true;
    MNT_ASSERT_OK(client_->StepEnd(&replayed));
    EXPECT_FALSE(replayed) << "a step holding a collective must not be replayed";
    EXPECT_TRUE(SameBytes(Get(y.data(), bytes), F32Bytes(n, 5.0f)))
        << "the started ALL_REDUCE did not see the step's FILL issued before it";
    EXPECT_TRUE(SameBytes(Get(w.data(), bytes), F32Bytes(n, 10.0f)))
        << "the ADD after the Wait did not see the collective's result";
    EXPECT_TRUE(SameBytes(Get(z.data(), bytes), F32Bytes(n, 3.0f)));
  }
}

// ---------------------------------------------------------------- 2+ GPUs

struct MultiCase {
  std::string name;
  MNT_CollectiveOp op;
  MNT_ReduceOp reduce;
  MNT_DType dtype;
  int64_t n;             // input elements (ALL_REDUCE, ALL_GATHER), output's otherwise
  bool in_place = false;
  int32_t root = 0;      // BROADCAST
};

// One rank's buffers and results.
struct RankData {
  MNT_Backend* backend = nullptr;
  std::unique_ptr<sdk::BackendClient> client;
  MNT_Communicator* comm = nullptr;
  std::vector<sdk::DeviceBuffer> in, out;          // per case (in empty: in place)
  std::vector<std::vector<uint8_t>> in_init, out_init;  // per case
  std::vector<std::vector<uint8_t>> got[2];        // per run, per case
  std::string error;
  std::atomic<const char*> stage{"not started"};
};

size_t Esize(MNT_DType t) { return sdk::DTypeSize(t); }
size_t InElems(const MultiCase& c, int world) {
  return c.op == MNT_COLLECTIVE_REDUCE_SCATTER ? static_cast<size_t>(c.n) * world
                                               : static_cast<size_t>(c.n);
}
size_t OutElems(const MultiCase& c, int world) {
  return c.op == MNT_COLLECTIVE_ALL_GATHER ? static_cast<size_t>(c.n) * world
                                           : static_cast<size_t>(c.n);
}

std::vector<MultiCase> MultiCases(int world) {
  std::vector<MultiCase> cases;
  for (int64_t n : {int64_t{5}, int64_t{262147}}) {
    const std::string sz = "[" + std::to_string(n) + "]";
    auto add = [&](std::string name, MNT_CollectiveOp op, MNT_ReduceOp r, MNT_DType t,
                   bool in_place = false, int32_t root = 0) {
      cases.push_back({name + " " + Name(t) + sz + (in_place ? " in place" : ""), op, r, t, n,
                       in_place, root});
    };
    const auto AR = MNT_COLLECTIVE_ALL_REDUCE, RS = MNT_COLLECTIVE_REDUCE_SCATTER,
               AG = MNT_COLLECTIVE_ALL_GATHER, BC = MNT_COLLECTIVE_BROADCAST;
    const auto SUM = MNT_REDUCE_OP_SUM, AVG = MNT_REDUCE_OP_AVG, MAX = MNT_REDUCE_OP_MAX,
               NONE = MNT_REDUCE_OP_INVALID;
    for (MNT_DType t : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
      add("ALL_REDUCE SUM", AR, SUM, t);
      add("ALL_REDUCE AVG", AR, AVG, t);
      add("ALL_REDUCE MAX", AR, MAX, t);
      add("REDUCE_SCATTER SUM", RS, SUM, t);
      add("REDUCE_SCATTER AVG", RS, AVG, t);
      add("REDUCE_SCATTER MAX", RS, MAX, t);
    }
    add("ALL_REDUCE SUM", AR, SUM, MNT_DTYPE_F32, true);
    add("ALL_REDUCE AVG", AR, AVG, MNT_DTYPE_BF16, true);
    add("ALL_GATHER", AG, NONE, MNT_DTYPE_F32);
    add("ALL_GATHER", AG, NONE, MNT_DTYPE_I32);
    add("ALL_GATHER", AG, NONE, MNT_DTYPE_BF16, true);
    add("BROADCAST root " + std::to_string(world - 1), BC, NONE, MNT_DTYPE_F32, false,
        world - 1);
    add("BROADCAST root 0", BC, NONE, MNT_DTYPE_F16, true, 0);
  }
  return cases;
}

// The inputs of every rank for case `ci` (same on every run).
std::vector<uint8_t> MultiInput(uint32_t seed, size_t ci, int rank, const MultiCase& c,
                                int world) {
  std::mt19937 rng(seed + 7919u * static_cast<uint32_t>(ci) +
                   104729u * static_cast<uint32_t>(rank));
  return RandomBytes(&rng, c.dtype, static_cast<int64_t>(InElems(c, world)));
}

// Checks rank r's output of case c against the host reference built from
// every rank's input.
void CheckAgainstReference(const MultiCase& c, int r, int world,
                           const std::vector<std::vector<uint8_t>>& inputs,
                           const std::vector<uint8_t>& got) {
  const size_t es = Esize(c.dtype);
  const size_t out_n = OutElems(c, world);
  ASSERT_EQ(got.size(), out_n * es);
  if (c.op == MNT_COLLECTIVE_ALL_GATHER) {
    std::vector<uint8_t> want;
    for (int q = 0; q < world; ++q) want.insert(want.end(), inputs[q].begin(), inputs[q].end());
    EXPECT_TRUE(SameBytes(got, want));
    return;
  }
  if (c.op == MNT_COLLECTIVE_BROADCAST) {
    EXPECT_TRUE(SameBytes(got, inputs[c.root]));
    return;
  }
  // Reductions: element i of the output reduces element off + i of every input.
  const size_t off = c.op == MNT_COLLECTIVE_REDUCE_SCATTER ? static_cast<size_t>(r) * out_n : 0;
  std::vector<std::vector<float>> x(world);
  for (int q = 0; q < world; ++q) x[q] = Floats(inputs[q], c.dtype);
  const std::vector<float> g = Floats(got, c.dtype);
  if (c.reduce == MNT_REDUCE_OP_MAX) {
    std::vector<uint8_t> want(out_n * es);
    for (size_t i = 0; i < out_n; ++i) {
      float m = x[0][off + i];
      for (int q = 1; q < world; ++q) m = std::max(m, x[q][off + i]);
      StoreFromFloat(want.data(), c.dtype, static_cast<int64_t>(i), m);  // exact
    }
    EXPECT_TRUE(SameBytes(got, want));
    return;
  }
  const double tol = c.dtype == MNT_DTYPE_F32 ? 1e-5 : 1e-2;
  const double div = c.reduce == MNT_REDUCE_OP_AVG ? world : 1.0;
  size_t bad = 0, worst_i = 0;
  double worst = 0;
  for (size_t i = 0; i < out_n; ++i) {
    double sum = 0, mag = 0;
    for (int q = 0; q < world; ++q) {  // rank order, float64
      sum += x[q][off + i];
      mag += std::fabs(x[q][off + i]);
    }
    const double want = sum / div;
    const double allowed = tol * mag / div + 1e-30;
    const double err = std::isfinite(g[i]) ? std::fabs(g[i] - want) : INFINITY;
    if (err > allowed) {
      ++bad;
      if (err / allowed > worst) {
        worst = err / allowed;
        worst_i = i;
      }
    }
  }
  if (bad > 0) {
    double sum = 0, mag = 0;
    for (int q = 0; q < world; ++q) {
      sum += x[q][off + worst_i];
      mag += std::fabs(x[q][off + worst_i]);
    }
    ADD_FAILURE() << bad << " of " << out_n << " elements outside " << tol << " x sum|x|"
                  << (div > 1 ? " / world" : "") << "; worst: element " << worst_i << " got "
                  << g[worst_i] << ", want " << sum / div << " (sum|x| " << mag << ")";
  }
}

TEST(CudaCollectivesMultiGpuTest, EveryOpAgainstAHostReferenceAndTheSameBitsTwice) {
  MNT_SKIP_WITHOUT_GPU();
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);  // MNT_SKIP_WITHOUT_GPU saw it work
  if (count < 2) {
    std::printf("SKIPPED: the multi-GPU collectives need 2 or more CUDA devices (this machine "
                "has %d)\n", count);
    GTEST_SKIP() << "the multi-GPU collectives need 2 or more CUDA devices (this machine has "
                 << count << ")";
  }
  const int world = std::min(count, 8);
  const uint32_t seed = testing::FreshSeed();
  std::printf("world size %d (%d CUDA devices)\n", world, count);

  std::vector<std::unique_ptr<RankData>> ranks;
  // Buffers are freed before the backends, whatever happens below.
  struct Cleanup {
    std::vector<std::unique_ptr<RankData>>* ranks;
    ~Cleanup() {
      for (auto& d : *ranks) {
        d->in.clear();
        d->out.clear();
        d->client.reset();
        DestroyBackend(d->backend);
      }
    }
  } cleanup{&ranks};
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::make_unique<RankData>());
    RankData& d = *ranks.back();
    d.backend = CreateBackend(r);
    ASSERT_NE(d.backend, nullptr);
    d.client = std::make_unique<sdk::BackendClient>(Plugin(), d.backend);
  }

  std::string id;
  const sdk::Status id_status = GetUniqueId(ranks[0]->backend, &id);
  MNT_SKIP_WITHOUT_NCCL(id_status);
  ASSERT_TRUE(id_status.ok()) << id_status.message();
  ASSERT_EQ(id.size(), kNcclIdBytes);

  const std::vector<MultiCase> cases = MultiCases(world);
  // Inputs (every rank's, for the reference), initial outputs, buffers.
  std::vector<std::vector<std::vector<uint8_t>>> inputs(cases.size());  // [case][rank]
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const MultiCase& c = cases[ci];
    const size_t es = Esize(c.dtype);
    for (int r = 0; r < world; ++r) {
      inputs[ci].push_back(MultiInput(seed, ci, r, c, world));
      RankData& d = *ranks[r];
      std::vector<uint8_t> out_init(OutElems(c, world) * es, 0xFF);
      std::vector<uint8_t> in_init = inputs[ci][r];
      if (c.in_place) {
        if (c.op == MNT_COLLECTIVE_ALL_GATHER) {
          std::copy(in_init.begin(), in_init.end(), out_init.begin() + r * in_init.size());
        } else if (c.op == MNT_COLLECTIVE_ALL_REDUCE ||
                   (c.op == MNT_COLLECTIVE_BROADCAST && r == c.root)) {
          out_init = in_init;
        }
        in_init.clear();  // no separate input buffer
      }
      sdk::DeviceBuffer in, out;
      if (!in_init.empty()) MNT_ASSERT_OK(d.client->Allocate(in_init.size(), MNT_MEMORY_DATA, &in));
      MNT_ASSERT_OK(d.client->Allocate(out_init.size(), MNT_MEMORY_DATA, &out));
      d.in.push_back(std::move(in));
      d.out.push_back(std::move(out));
      d.in_init.push_back(std::move(in_init));
      d.out_init.push_back(std::move(out_init));
    }
  }

  // One thread per rank: create, run every case twice, destroy.
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  auto body = [&](int r) {
    RankData& d = *ranks[r];
    auto fail = [&](const std::string& what, const sdk::Status& s) {
      d.error = "rank " + std::to_string(r) + ": " + what + ": " + s.message();
    };
    d.stage = "Communicator_Create";
    sdk::Status s = CreateCommunicator(d.backend, r, world, id, &d.comm);
    if (!s.ok()) {
      fail("Communicator_Create", s);
    } else {
      for (int run = 0; run < 2 && d.error.empty(); ++run) {
        d.stage = "uploads";
        for (size_t ci = 0; ci < cases.size() && d.error.empty(); ++ci) {
          if (!d.in_init[ci].empty()) {
            s = d.client->ToDevice(d.in[ci].data(), d.in_init[ci].data(), d.in_init[ci].size());
            if (!s.ok()) fail("upload", s);
          }
          s = d.client->ToDevice(d.out[ci].data(), d.out_init[ci].data(), d.out_init[ci].size());
          if (!s.ok()) fail("upload", s);
        }
        for (size_t ci = 0; ci < cases.size() && d.error.empty(); ++ci) {
          const MultiCase& c = cases[ci];
          d.stage = c.name.c_str();
          const size_t es = Esize(c.dtype);
          const int64_t in_dims[1] = {static_cast<int64_t>(InElems(c, world))};
          const int64_t out_dims[1] = {static_cast<int64_t>(OutElems(c, world))};
          const MNT_Tensor to = sdk::MakeTensor(d.out[ci].data(), c.dtype, 1, out_dims);
          MNT_Tensor ti{};
          const MNT_Tensor* tin = &ti;
          if (!c.in_place) {
            ti = sdk::MakeTensor(d.in[ci].data(), c.dtype, 1, in_dims);
          } else if (c.op == MNT_COLLECTIVE_ALL_GATHER) {
            ti = sdk::MakeTensor(static_cast<char*>(d.out[ci].data()) + r * c.n * es, c.dtype,
                                 1, in_dims);
          } else if (c.op == MNT_COLLECTIVE_BROADCAST && r != c.root) {
            tin = nullptr;  // non-root ranks may leave the input out
          } else {
            ti = to;
          }
          s = Collective(d.backend, d.comm, c.op, c.reduce, c.root, tin, &to);
          if (!s.ok()) fail(c.name, s);
        }
        if (!d.error.empty()) break;
        d.stage = "Synchronize";
        s = d.client->Synchronize();
        if (!s.ok()) {
          fail("Synchronize", s);
          break;
        }
        d.stage = "downloads";
        for (size_t ci = 0; ci < cases.size() && d.error.empty(); ++ci) {
          std::vector<uint8_t> got(d.out_init[ci].size());
          s = d.client->ToHost(got.data(), d.out[ci].data(), got.size());
          if (!s.ok()) fail("download", s);
          d.got[run].push_back(std::move(got));
        }
      }
      d.stage = "Communicator_Destroy";
      s = DestroyCommunicator(d.backend, d.comm);
      if (!s.ok() && d.error.empty()) fail("Communicator_Destroy", s);
      d.comm = nullptr;
    }
    d.stage = "done";
    std::lock_guard<std::mutex> lock(mu);
    ++finished;
    cv.notify_all();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(body, r);
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(kWatchdogSeconds),
                     [&] { return finished == world; })) {
      std::fprintf(stderr, "cuda_collectives_test: FAILED: the ranks did not finish within %d s "
                   "(a rank stuck in NCCL?):\n", kWatchdogSeconds);
      for (int r = 0; r < world; ++r) {
        std::fprintf(stderr, "  rank %d: at %s%s%s\n", r, ranks[r]->stage.load(),
                     ranks[r]->error.empty() ? "" : "; ", ranks[r]->error.c_str());
      }
      std::fflush(stderr);
      std::fflush(stdout);
      std::_Exit(1);
    }
  }
  for (std::thread& t : threads) t.join();

  bool ok = true;
  for (int r = 0; r < world; ++r) {
    if (!ranks[r]->error.empty()) {
      ADD_FAILURE() << ranks[r]->error;
      ok = false;
    }
  }
  ASSERT_TRUE(ok);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const MultiCase& c = cases[ci];
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE(c.name + ", rank " + std::to_string(r) + " of " + std::to_string(world));
      ASSERT_EQ(ranks[r]->got[0].size(), cases.size());
      ASSERT_EQ(ranks[r]->got[1].size(), cases.size());
      CheckAgainstReference(c, r, world, inputs[ci], ranks[r]->got[0][ci]);
      EXPECT_TRUE(SameBytes(ranks[r]->got[1][ci], ranks[r]->got[0][ci]))
          << "the second run gave other bits";
      if (c.op == MNT_COLLECTIVE_ALL_REDUCE && r > 0) {
        EXPECT_TRUE(SameBytes(ranks[r]->got[0][ci], ranks[0]->got[0][ci]))
            << "an ALL_REDUCE gave rank " << r << " other bits than rank 0";
      }
    }
  }
}

// ---------------------------------------------------------------- started, 2+ GPUs

// How long a rank waits for another's host-side signal. A Start that
// blocks the host until the peers start theirs never signals; the waiting
// rank then fails the test and starts anyway, which lets the blocked rank
// go on, so the test ends instead of hanging (well before the watchdog).
constexpr int kGateSeconds = 30;

// A host-side signal from one rank's thread to the others.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // False when the gate stayed shut for kGateSeconds.
  bool WaitOpen() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(kGateSeconds), [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// One rank of the started-collective tests, driven by its own thread. No
// gtest assertions there: the first failure is kept in `error` and
// reported by the main thread.
struct Rank {
  int index = 0;
  MNT_Backend* backend = nullptr;
  std::unique_ptr<sdk::BackendClient> client;
  MNT_Communicator* comm = nullptr;
  // Freed by the main thread after the communicator is destroyed (its
  // Destroy waits for every collective that may still use them).
  std::vector<sdk::DeviceBuffer> buffers;
  std::string error;
  std::atomic<const char*> stage{"not started"};

  bool ok() const { return error.empty(); }
  void Fail(const std::string& what) {
    if (error.empty()) error = "rank " + std::to_string(index) + ": " + what;
  }
  // Keeps the first failure; true when `s` is OK.
  bool Check(const char* what, const sdk::Status& s) {
    if (!s.ok()) Fail(std::string(what) + ": " + s.message());
    return s.ok();
  }
  void* Alloc(size_t bytes) {
    sdk::DeviceBuffer b;
    if (!Check("Memory_Allocate", client->Allocate(bytes, MNT_MEMORY_DATA, &b))) return nullptr;
    buffers.push_back(std::move(b));
    return buffers.back().data();
  }
  // A device buffer holding `bytes`.
  void* Device(const std::vector<uint8_t>& bytes) {
    void* p = Alloc(bytes.size());
    if (p != nullptr) Put(p, bytes);
    return p;
  }
  bool Put(void* dst, const std::vector<uint8_t>& bytes) {
    return Check("upload", client->ToDevice(dst, bytes.data(), bytes.size()));
  }
  // After every op on the backend's stream.
  std::vector<uint8_t> Get(const void* src, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    if (Check("Backend_Synchronize", client->Synchronize())) {
      Check("download", client->ToHost(out.data(), src, bytes));
    }
    return out;
  }
  bool Run(MNT_CollectiveOp op, MNT_ReduceOp reduce, int32_t root, const MNT_Tensor* in,
           const MNT_Tensor* out) {
    return Check("Collectives_Run", Collective(backend, comm, op, reduce, root, in, out));
  }
  MNT_CollectiveWork* Start(MNT_CollectiveOp op, MNT_ReduceOp reduce, int32_t root,
                            const MNT_Tensor* in, const MNT_Tensor* out) {
    MNT_CollectiveWork* work = nullptr;
    if (!Check("Collectives_Start",
               StartCollective(backend, comm, op, reduce, root, in, out, &work))) {
      return nullptr;
    }
    if (work == nullptr) Fail("Collectives_Start returned OK and no work");
    return work;
  }
  bool Wait(MNT_CollectiveWork* work) {
    return Check("Collectives_Wait", WaitCollective(backend, comm, work));
  }
};

// n elements of `dtype`, element i = f(i) (values every dtype stores exactly).
std::vector<uint8_t> Filled(MNT_DType dtype, int64_t n, const std::function<float(int64_t)>& f) {
  std::vector<uint8_t> b(static_cast<size_t>(n) * sdk::DTypeSize(dtype));
  for (int64_t i = 0; i < n; ++i) StoreFromFloat(b.data(), dtype, i, f(i));
  return b;
}

class CudaCollectivesStartMultiGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MNT_SKIP_WITHOUT_GPU();
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    if (count < 2) {
      std::printf("SKIPPED: started collectives across GPUs need 2 or more CUDA devices (this "
                  "machine has %d)\n", count);
      GTEST_SKIP() << "started collectives across GPUs need 2 or more CUDA devices (this "
                   << "machine has " << count << ")";
    }
    world_ = std::min(count, 8);
    for (int r = 0; r < world_; ++r) {
      ranks_.push_back(std::make_unique<Rank>());
      Rank& d = *ranks_.back();
      d.index = r;
      d.backend = CreateBackend(r);
      ASSERT_NE(d.backend, nullptr);
      d.client = std::make_unique<sdk::BackendClient>(Plugin(), d.backend);
    }
    const sdk::Status s = GetUniqueId(ranks_[0]->backend, &id_);
    MNT_SKIP_WITHOUT_NCCL(s);
    ASSERT_TRUE(s.ok()) << s.message();
    std::printf("world size %d (%d CUDA devices)\n", world_, count);
  }

  void TearDown() override {
    for (auto& d : ranks_) {
      d->buffers.clear();
      d->client.reset();
      DestroyBackend(d->backend);
    }
  }

  // Runs body(rank) on one thread per rank, between Communicator_Create
  // and Communicator_Destroy (on that thread too: NCCL completes both with
  // every rank at once), then fails the test with every rank's error. Once
  // per test (the unique id is SetUp's). Ranks that have not all finished
  // after kWatchdogSeconds end the binary with each rank's stage.
  void RunRanks(const std::function<void(Rank&)>& body) {
    std::mutex mu;
    std::condition_variable cv;
    int finished = 0;
    auto thread_body = [&](Rank& d) {
      d.stage = "Communicator_Create";
      if (d.Check("Communicator_Create",
                  CreateCommunicator(d.backend, d.index, world_, id_, &d.comm))) {
        body(d);
        d.stage = "Communicator_Destroy";
        d.Check("Communicator_Destroy", DestroyCommunicator(d.backend, d.comm));
        d.comm = nullptr;
      }
      d.stage = "done";
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      cv.notify_all();
    };
    std::vector<std::thread> threads;
    for (auto& d : ranks_) threads.emplace_back(thread_body, std::ref(*d));
    {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, std::chrono::seconds(kWatchdogSeconds),
                       [&] { return finished == world_; })) {
        std::fprintf(stderr, "cuda_collectives_test: FAILED: the ranks did not finish within "
                     "%d s (a rank stuck in NCCL?):\n", kWatchdogSeconds);
        for (auto& d : ranks_) {
          std::fprintf(stderr, "  rank %d: at %s%s%s\n", d->index, d->stage.load(),
                       d->error.empty() ? "" : "; ", d->error.c_str());
        }
        std::fflush(stderr);
        std::fflush(stdout);
        std::_Exit(1);
      }
    }
    for (std::thread& t : threads) t.join();
    for (auto& d : ranks_) EXPECT_TRUE(d->ok()) << d->error;
  }

  int world_ = 0;
  std::string id_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

// Start + Wait against Run on the same inputs: the same bits, and both
// against the host reference. Every case is run first, then every case is
// started (all in flight at once) and waited for in order.
TEST_F(CudaCollectivesStartMultiGpuTest, StartAndWaitGiveTheBitsOfRun) {
  const int world = world_;
  const uint32_t seed = testing::FreshSeed();
  std::vector<MultiCase> cases;
  for (int64_t n : {int64_t{5}, int64_t{262147}}) {
    const std::string sz = "[" + std::to_string(n) + "]";
    const auto add = [&](const std::string& name, MNT_CollectiveOp op, MNT_ReduceOp r,
                         MNT_DType t, int32_t root = 0) {
      cases.push_back({name + " " + Name(t) + sz, op, r, t, n, false, root});
    };
    for (MNT_DType t : {MNT_DTYPE_F32, MNT_DTYPE_BF16}) {
      add("ALL_REDUCE SUM", MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, t);
      add("ALL_REDUCE AVG", MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_AVG, t);
      add("ALL_REDUCE MAX", MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_MAX, t);
      add("REDUCE_SCATTER SUM", MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_SUM, t);
    }
    add("ALL_GATHER", MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, MNT_DTYPE_F32);
    add("ALL_GATHER", MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, MNT_DTYPE_I32);
    add("BROADCAST root " + std::to_string(world - 1), MNT_COLLECTIVE_BROADCAST,
        MNT_REDUCE_OP_INVALID, MNT_DTYPE_F32, world - 1);
    add("BROADCAST root 0", MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, MNT_DTYPE_F16, 0);
  }
  std::vector<std::vector<std::vector<uint8_t>>> inputs(cases.size());  // [case][rank]
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    for (int r = 0; r < world; ++r) inputs[ci].push_back(MultiInput(seed, ci, r, cases[ci], world));
  }
  // [rank][case]
  std::vector<std::vector<std::vector<uint8_t>>> by_run(world), by_start(world);
  RunRanks([&](Rank& d) {
    const int r = d.index;
    std::vector<MNT_Tensor> tin, trun, tstart;
    std::vector<void*> out_run, out_start;
    d.stage = "uploads";
    for (size_t ci = 0; ci < cases.size() && d.ok(); ++ci) {
      const MultiCase& c = cases[ci];
      const size_t out_bytes = OutElems(c, world) * Esize(c.dtype);
      const int64_t in_dims[1] = {static_cast<int64_t>(InElems(c, world))};
      const int64_t out_dims[1] = {static_cast<int64_t>(OutElems(c, world))};
      void* in = d.Device(inputs[ci][r]);
      out_run.push_back(d.Device(std::vector<uint8_t>(out_bytes, 0xFF)));
      out_start.push_back(d.Device(std::vector<uint8_t>(out_bytes, 0xFF)));
      tin.push_back(sdk::MakeTensor(in, c.dtype, 1, in_dims));
      trun.push_back(sdk::MakeTensor(out_run.back(), c.dtype, 1, out_dims));
      tstart.push_back(sdk::MakeTensor(out_start.back(), c.dtype, 1, out_dims));
    }
    d.stage = "Collectives_Run";
    for (size_t ci = 0; ci < cases.size() && d.ok(); ++ci) {
      const MultiCase& c = cases[ci];
      d.Run(c.op, c.reduce, c.root, &tin[ci], &trun[ci]);
    }
    d.stage = "Collectives_Start";
    std::vector<MNT_CollectiveWork*> works;
    for (size_t ci = 0; ci < cases.size() && d.ok(); ++ci) {
      const MultiCase& c = cases[ci];
      works.push_back(d.Start(c.op, c.reduce, c.root, &tin[ci], &tstart[ci]));
    }
    d.stage = "Collectives_Wait";
    for (size_t ci = 0; ci < works.size() && d.ok(); ++ci) d.Wait(works[ci]);
    d.stage = "downloads";
    for (size_t ci = 0; ci < cases.size() && d.ok(); ++ci) {
      const size_t out_bytes = OutElems(cases[ci], world) * Esize(cases[ci].dtype);
      by_run[r].push_back(d.Get(out_run[ci], out_bytes));
      by_start[r].push_back(d.Get(out_start[ci], out_bytes));
    }
  });
  if (HasFailure()) return;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE(cases[ci].name + ", rank " + std::to_string(r) + " of " +
                   std::to_string(world));
      ASSERT_EQ(by_start[r].size(), cases.size());
      CheckAgainstReference(cases[ci], r, world, inputs[ci], by_start[r][ci]);
      EXPECT_TRUE(SameBytes(by_start[r][ci], by_run[r][ci]))
          << "Start + Wait gave other bits than Run";
    }
  }
}

// Six collectives of every kind in flight at once on each rank, waited for
// in reverse order, twice (the second round reuses the first's events);
// integer values, so every result is exact.
TEST_F(CudaCollectivesStartMultiGpuTest, SeveralInFlightWaitedForInReverseOrder) {
  const int world = world_;
  const int64_t n = (int64_t{1} << 20) + 3;
  const float tri = static_cast<float>(world * (world + 1) / 2);  // 1 + 2 + ... + world
  RunRanks([&](Rank& d) {
    const int r = d.index;
    const float me = static_cast<float>(r + 1);
    const int64_t dn[1] = {n}, dwn[1] = {n * world};
    const auto F32 = MNT_DTYPE_F32;
    // Inputs, outputs (poisoned) and what each output must hold.
    void* in_sum = d.Device(Filled(F32, n, [&](int64_t) { return me; }));
    void* in_max = d.Device(Filled(F32, n, [&](int64_t i) { return me + (i % 3); }));
    void* in_rs = d.Device(Filled(F32, n * world, [&](int64_t i) {
      return static_cast<float>(i / n + 1) * me;  // chunk q: (q + 1) * (r + 1)
    }));
    void* in_ag = d.Device(Filled(F32, n, [&](int64_t) { return 10.0f * me; }));
    void* in_bc = d.Device(Filled(F32, n, [&](int64_t) { return 42.0f + static_cast<float>(r); }));
    void* in_bf = d.Device(Filled(MNT_DTYPE_BF16, n, [&](int64_t) { return me; }));
    if (!d.ok()) return;
    const std::vector<uint8_t> want[6] = {
        Filled(F32, n, [&](int64_t) { return tri; }),
        Filled(F32, n, [&](int64_t i) { return static_cast<float>(world + (i % 3)); }),
        Filled(F32, n, [&](int64_t) { return me * tri; }),
        Filled(F32, n * world, [&](int64_t i) { return 10.0f * static_cast<float>(i / n + 1); }),
        Filled(F32, n, [&](int64_t) { return 42.0f + static_cast<float>(world - 1); }),
        Filled(MNT_DTYPE_BF16, n, [&](int64_t) { return tri; }),
    };
    const char* names[6] = {"ALL_REDUCE SUM", "ALL_REDUCE MAX", "REDUCE_SCATTER SUM",
                            "ALL_GATHER",     "BROADCAST",      "ALL_REDUCE SUM bf16"};
    void* out[6];
    for (int k = 0; k < 6; ++k) out[k] = d.Alloc(want[k].size());
    if (!d.ok()) return;
    const MNT_Tensor t_sum = sdk::MakeTensor(in_sum, F32, 1, dn);
    const MNT_Tensor t_max = sdk::MakeTensor(in_max, F32, 1, dn);
    const MNT_Tensor t_rs = sdk::MakeTensor(in_rs, F32, 1, dwn);
    const MNT_Tensor t_ag = sdk::MakeTensor(in_ag, F32, 1, dn);
    const MNT_Tensor t_bc = sdk::MakeTensor(in_bc, F32, 1, dn);
    const MNT_Tensor t_bf = sdk::MakeTensor(in_bf, MNT_DTYPE_BF16, 1, dn);
    const MNT_Tensor o[6] = {
        sdk::MakeTensor(out[0], F32, 1, dn),  sdk::MakeTensor(out[1], F32, 1, dn),
        sdk::MakeTensor(out[2], F32, 1, dn),  sdk::MakeTensor(out[3], F32, 1, dwn),
        sdk::MakeTensor(out[4], F32, 1, dn),  sdk::MakeTensor(out[5], MNT_DTYPE_BF16, 1, dn),
    };
    for (int round = 0; round < 2 && d.ok(); ++round) {
      d.stage = "uploads";
      for (int k = 0; k < 6; ++k) d.Put(out[k], std::vector<uint8_t>(want[k].size(), 0xFF));
      d.stage = "Collectives_Start";
      MNT_CollectiveWork* w[6] = {};
      w[0] = d.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &t_sum, &o[0]);
      w[1] = d.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_MAX, 0, &t_max, &o[1]);
      w[2] = d.Start(MNT_COLLECTIVE_REDUCE_SCATTER, MNT_REDUCE_OP_SUM, 0, &t_rs, &o[2]);
      w[3] = d.Start(MNT_COLLECTIVE_ALL_GATHER, MNT_REDUCE_OP_INVALID, 0, &t_ag, &o[3]);
      w[4] = d.Start(MNT_COLLECTIVE_BROADCAST, MNT_REDUCE_OP_INVALID, world - 1, &t_bc, &o[4]);
      w[5] = d.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &t_bf, &o[5]);
      if (!d.ok()) return;
      d.stage = "Collectives_Wait (reverse order)";
      for (int k = 5; k >= 0 && d.ok(); --k) d.Wait(w[k]);
      d.stage = "downloads";
      for (int k = 0; k < 6 && d.ok(); ++k) {
        const std::vector<uint8_t> got = d.Get(out[k], want[k].size());
        const ::testing::AssertionResult same = SameBytes(got, want[k]);
        if (d.ok() && !same) {
          d.Fail(std::string("round ") + std::to_string(round) + ", " + names[k] + ": " +
                 same.message());
        }
      }
    }
  });
}

// Rank 0 issues Start, Wait and an ADD reading the collective's output
// before any other rank has started its part (they start when rank 0's
// thread says it has issued all three, and a little later): only the
// ordering Wait sets up on the backend's stream gives the ADD the result.
TEST_F(CudaCollectivesStartMultiGpuTest, AnOpAfterTheWaitSeesTheResult) {
  const int world = world_;
  const int64_t n = int64_t{16} << 20;  // 64 MiB
  const size_t bytes = static_cast<size_t>(n) * 4;
  const float tri = static_cast<float>(world * (world + 1) / 2);
  Gate issued;
  RunRanks([&](Rank& d) {
    const int r = d.index;
    const int64_t dn[1] = {n};
    void* x = d.Device(F32Bytes(n, static_cast<float>(r + 1)));
    void* y = d.Alloc(bytes);
    void* z = d.Alloc(bytes);
    if (!d.ok()) return;
    const MNT_Tensor tx = sdk::MakeTensor(x, MNT_DTYPE_F32, 1, dn);
    const MNT_Tensor ty = sdk::MakeTensor(y, MNT_DTYPE_F32, 1, dn);
    const MNT_Tensor tz = sdk::MakeTensor(z, MNT_DTYPE_F32, 1, dn);
    // Warm-up: NCCL's first collective of this kind may connect the ranks
    // from the host, with every rank in the call.
    d.stage = "warm-up";
    d.Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx, &ty);
    d.Get(y, 4);
    d.Put(y, std::vector<uint8_t>(bytes, 0xFF));
    d.Put(z, std::vector<uint8_t>(bytes, 0xFF));
    d.Check("Backend_Synchronize", d.client->Synchronize());
    if (!d.ok()) {
      if (r == 0) issued.Open();
      return;
    }
    if (r != 0) {
      d.stage = "waiting for rank 0 to issue Start, Wait and ADD";
      if (!issued.WaitOpen()) {
        d.Fail("rank 0 had not issued Start, Wait and an ADD " + std::to_string(kGateSeconds) +
               " s after this rank began waiting, while this rank had not started its "
               "collective: Start or Wait blocks the host until the peers start");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    d.stage = "Start, Wait, ADD";
    MNT_CollectiveWork* w = d.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx, &ty);
    if (w != nullptr) d.Wait(w);
    d.Check("ADD", Add(*d.client, ty, tz, 2.0f));
    if (r == 0) issued.Open();
    if (!d.ok()) return;
    d.stage = "downloads";
    const ::testing::AssertionResult y_ok = SameBytes(d.Get(y, bytes), F32Bytes(n, tri));
    if (d.ok() && !y_ok) d.Fail(std::string("the ALL_REDUCE's output: ") + y_ok.message());
    const ::testing::AssertionResult z_ok = SameBytes(d.Get(z, bytes), F32Bytes(n, 2 * tri));
    if (d.ok() && !z_ok) {
      d.Fail(std::string("the ADD issued after the Wait did not see the result: ") +
             z_ok.message());
    }
  });
}

// Rank 0's Start returns while no other rank has started its collective:
// the others start only once rank 0's thread says Start returned.
TEST_F(CudaCollectivesStartMultiGpuTest, StartReturnsBeforeThePeersStart) {
  const int world = world_;
  const int64_t n = int64_t{4} << 20;
  const size_t bytes = static_cast<size_t>(n) * 4;
  const float tri = static_cast<float>(world * (world + 1) / 2);
  Gate started;
  std::atomic<double> start_ms{-1.0};
  RunRanks([&](Rank& d) {
    const int r = d.index;
    const int64_t dn[1] = {n};
    void* x = d.Device(F32Bytes(n, static_cast<float>(r + 1)));
    void* y = d.Alloc(bytes);
    if (!d.ok()) return;
    const MNT_Tensor tx = sdk::MakeTensor(x, MNT_DTYPE_F32, 1, dn);
    const MNT_Tensor ty = sdk::MakeTensor(y, MNT_DTYPE_F32, 1, dn);
    d.stage = "warm-up";  // NCCL may connect the ranks at the first collective
    d.Run(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx, &ty);
    d.Get(y, 4);
    d.Put(y, std::vector<uint8_t>(bytes, 0xFF));
    d.Check("Backend_Synchronize", d.client->Synchronize());
    if (!d.ok()) {
      if (r == 0) started.Open();
      return;
    }
    MNT_CollectiveWork* w = nullptr;
    if (r == 0) {
      d.stage = "Collectives_Start (alone)";
      const auto t0 = std::chrono::steady_clock::now();
      w = d.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx, &ty);
      start_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count();
      started.Open();
    } else {
      d.stage = "waiting for rank 0's Start to return";
      if (!started.WaitOpen()) {
        d.Fail("rank 0's Start had not returned " + std::to_string(kGateSeconds) +
               " s after this rank began waiting, while this rank had not started its "
               "collective: Start blocks the host until the peers start");
      }
      d.stage = "Collectives_Start";
      w = d.Start(MNT_COLLECTIVE_ALL_REDUCE, MNT_REDUCE_OP_SUM, 0, &tx, &ty);
    }
    if (w == nullptr) return;
    d.stage = "Collectives_Wait";
    d.Wait(w);
    d.stage = "downloads";
    const ::testing::AssertionResult y_ok = SameBytes(d.Get(y, bytes), F32Bytes(n, tri));
    if (d.ok() && !y_ok) d.Fail(std::string("the ALL_REDUCE's output: ") + y_ok.message());
  });
  std::printf("rank 0's Collectives_Start returned in %.3f ms, before its peers started\n",
              start_ms.load());
}

}  // namespace
}  // namespace mnt::cuda

// The backend API itself: creation options, info, allocator statistics,
// copies, events and the error paths of Backend_Run.
#include <xmmintrin.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using ::testing::HasSubstr;
using testing::BackendFixture;

class PluginTest : public BackendFixture {
 protected:
  int64_t Current(MNT_MemoryCategory c) {
    int64_t cur = -1, peak = -1;
    EXPECT_TRUE(client().GetStats(c, &cur, &peak).ok());
    return cur;
  }
  int64_t Peak(MNT_MemoryCategory c) {
    int64_t cur = -1, peak = -1;
    EXPECT_TRUE(client().GetStats(c, &cur, &peak).ok());
    return peak;
  }
  void* Alloc(size_t bytes, MNT_MemoryCategory c) {
    MNT_Memory_Allocate_Args a{};
    a.struct_size = MNT_Memory_Allocate_Args_STRUCT_SIZE;
    a.backend = backend();
    a.size_bytes = bytes;
    a.category = c;
    EXPECT_TRUE(Ok(api()->Memory_Allocate(&a)));
    return a.data;
  }
  bool Ok(MNT_Error* e) { return Status(e).ok(); }
  sdk::Status Status(MNT_Error* e) {
    return sdk::StatusFromPluginError(CpuBackendPluginApi(), e);
  }
};

TEST_F(PluginTest, DescriptorIsABackendNamedCpu) {
  const MNT_Plugin_Api* p = CpuBackendPluginApi();
  EXPECT_EQ(p->kind, MNT_PLUGIN_KIND_BACKEND);
  EXPECT_STREQ(p->name, "cpu");
  EXPECT_EQ(p->abi_version.major_version, MNT_ABI_MAJOR);
  EXPECT_EQ(p->abi_version.minor_version, MNT_ABI_MINOR);
  EXPECT_EQ(p->backend->struct_size, MNT_Backend_Api_STRUCT_SIZE);
  EXPECT_NE(p->backend->Event_Destroy, nullptr);
  EXPECT_EQ(p->precision, nullptr);
  EXPECT_EQ(p->model, nullptr);
}

TEST_F(PluginTest, GetInfoNamesTheGemmEngineAndIsHostAddressable) {
  MNT_Backend_GetInfo_Args a{};
  a.struct_size = MNT_Backend_GetInfo_Args_STRUCT_SIZE;
  a.backend = backend();
  ASSERT_TRUE(Ok(api()->Backend_GetInfo(&a)));
  EXPECT_THAT(a.device_name,
              ::testing::MatchesRegex(
                  "cpu \\((oneDNN [0-9.]+ [a-z0-9_]+, bf16 (native|as fp32)|"
                  "reference GEMM on OpenBLAS [0-9.]+), (up to )?[0-9]+ threads\\)"));
  EXPECT_EQ(a.host_addressable, 1);
  EXPECT_GT(a.total_memory_bytes, 0);
}

TEST_F(PluginTest, CreateOptions) {
  EXPECT_EQ(TryCreate("threads=1"), "");
  EXPECT_EQ(TryCreate(""), "");
  EXPECT_THAT(TryCreate("thread=2"), HasSubstr("unknown key 'thread'"));
  EXPECT_THAT(TryCreate("threads=zero"), HasSubstr("threads='zero' is not an integer"));
  EXPECT_THAT(TryCreate("threads=0"), HasSubstr("outside [1, 1024]"));
  EXPECT_EQ(TryCreate("threads=2,step_teams=1:2"), "");
  EXPECT_THAT(TryCreate("step_teams=1::2"), HasSubstr("step_teams=1::2: each of its"));
  EXPECT_THAT(TryCreate("step_teams=0"), HasSubstr("in [1, 1024]"));
  EXPECT_THAT(TryCreate("step_teams=two"), HasSubstr("step_teams=two"));
  EXPECT_THAT(TryCreate(nullptr, 1), HasSubstr("one device (ordinal 0), got 1"));
  EXPECT_EQ(TryCreate("gemm=reference"), "");
  EXPECT_EQ(TryCreate("gemm=onednn"), "");  // tools/bazel installs oneDNN
  const std::string native = TryCreate("gemm=onednn,onednn_bf16=native");
  if (!native.empty()) {  // a CPU without AVX512_BF16 / AMX
    EXPECT_THAT(native, HasSubstr("has no bf16 matmul on this CPU"));
  }
  EXPECT_EQ(TryCreate("gemm=auto,onednn_bf16=fp32,threads=2"), "");
  EXPECT_THAT(TryCreate("gemm=mkl"),
              HasSubstr("gemm=mkl is not one of auto, onednn, reference"));
  EXPECT_THAT(TryCreate("onednn_bf16=yes"),
              HasSubstr("onednn_bf16=yes is not one of auto, native, fp32"));
  EXPECT_EQ(TryCreate("record_steps=on"), "");
  EXPECT_EQ(TryCreate("record_steps=off"), "");
  EXPECT_THAT(TryCreate("record_steps=yes"),
              HasSubstr("record_steps=yes is not one of on, off"));
  EXPECT_EQ(TryCreate("denormals=keep"), "");
  EXPECT_EQ(TryCreate("denormals=flush"), "");
  EXPECT_THAT(TryCreate("denormals=zero"),
              HasSubstr("denormals=zero is not one of flush, keep"));
}

// denormals=flush (the default): a subnormal input of the backend's
// arithmetic reads as 0 and a subnormal result is 0, on every thread of the
// team; keep: IEEE. Either way the caller's own mode is what it was. ADD of
// 4096 elements (alpha x) runs on the OpenMP team; inputs 1e-30 (normal,
// times 1e-9: a subnormal product) and 3e-39 (subnormal, times 1: kept
// or read as 0).
TEST_F(PluginTest, DenormalsAreFlushedByDefaultAndKeptOnRequest) {
  constexpr int64_t kN = 4096;
  const float min_normal = std::numeric_limits<float>::min();
  for (const float x : {1e-30f, 3e-39f}) {
    const float alpha = x == 1e-30f ? 1e-9f : 1.0f;
    const float want = x * alpha;  // this thread: IEEE
    ASSERT_GT(want, 0.0f);
    ASSERT_LT(want, min_normal);
    std::vector<uint8_t> in_bytes(kN * sizeof(float));
    for (int64_t i = 0; i < kN; ++i) std::memcpy(&in_bytes[i * sizeof(float)], &x, sizeof(x));
    const testing::HostOperand in{MNT_DTYPE_F32, {kN}, in_bytes};
    const testing::HostOperand out{MNT_DTYPE_F32, {kN}, std::vector<uint8_t>(kN * 4, 0xff)};
    const MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, alpha, 0.0f};
    for (const char* options : {"threads=2", "threads=2,denormals=flush", "threads=2,denormals=keep"}) {
      const unsigned caller = _mm_getcsr();
      const std::vector<std::vector<uint8_t>> got =
          testing::RunOnFreshBackend(options, MNT_OP_ADD, {in}, {out}, &p);
      EXPECT_EQ(_mm_getcsr(), caller) << options << ": the caller's MXCSR changed";
      ASSERT_EQ(got.size(), 1u);
      const bool keep = std::string(options).find("keep") != std::string::npos;
      for (int64_t i = 0; i < kN; ++i) {
        float v;
        std::memcpy(&v, &got[0][i * sizeof(float)], sizeof(v));
        ASSERT_EQ(v, keep ? want : 0.0f) << options << ", x " << x << ", element " << i;
      }
    }
  }
}

TEST_F(PluginTest, ShortArgsStructIsRejected) {
  MNT_Backend_GetInfo_Args a{};
  a.struct_size = 8;
  a.backend = backend();
  const sdk::Status s = Status(api()->Backend_GetInfo(&a));
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(s.message(), HasSubstr("struct_size 8 is smaller"));
}

TEST_F(PluginTest, AllocatorTracksCurrentAndPeakPerCategory) {
  EXPECT_EQ(Current(MNT_MEMORY_ALL), 0);
  void* w = Alloc(1000, MNT_MEMORY_WEIGHTS);
  void* g = Alloc(24, MNT_MEMORY_GRADIENTS);
  void* s = Alloc(512, MNT_MEMORY_OPTIMIZER_STATE);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s) % 256, 0u);
  EXPECT_EQ(Current(MNT_MEMORY_WEIGHTS), 1000);
  EXPECT_EQ(Current(MNT_MEMORY_GRADIENTS), 24);
  EXPECT_EQ(Current(MNT_MEMORY_OPTIMIZER_STATE), 512);
  EXPECT_EQ(Current(MNT_MEMORY_ACTIVATIONS), 0);
  EXPECT_EQ(Current(MNT_MEMORY_ALL), 1536);
  EXPECT_TRUE(client().Free(w).ok());
  EXPECT_EQ(Current(MNT_MEMORY_WEIGHTS), 0);
  EXPECT_EQ(Peak(MNT_MEMORY_WEIGHTS), 1000);
  EXPECT_EQ(Current(MNT_MEMORY_ALL), 536);
  EXPECT_EQ(Peak(MNT_MEMORY_ALL), 1536);

  MNT_Memory_ResetPeak_Args r{};
  r.struct_size = MNT_Memory_ResetPeak_Args_STRUCT_SIZE;
  r.backend = backend();
  ASSERT_TRUE(Ok(api()->Memory_ResetPeak(&r)));
  EXPECT_EQ(Peak(MNT_MEMORY_WEIGHTS), 0);
  EXPECT_EQ(Peak(MNT_MEMORY_ALL), 536);
  EXPECT_TRUE(client().Free(g).ok());
  EXPECT_TRUE(client().Free(s).ok());
  EXPECT_EQ(Current(MNT_MEMORY_ALL), 0);
}

TEST_F(PluginTest, SixteenBitTensorTakesHalfTheBytes) {
  Upload(Random(37 * 19), MNT_DTYPE_F32, {37, 19}, MNT_MEMORY_WEIGHTS);
  Upload(Random(37 * 19), MNT_DTYPE_BF16, {37, 19}, MNT_MEMORY_GRADIENTS);
  Upload(Random(37 * 19), MNT_DTYPE_F16, {37, 19}, MNT_MEMORY_ACTIVATIONS);
  EXPECT_EQ(Current(MNT_MEMORY_WEIGHTS), 37 * 19 * 4);
  EXPECT_EQ(Current(MNT_MEMORY_GRADIENTS), 37 * 19 * 2);
  EXPECT_EQ(Current(MNT_MEMORY_ACTIVATIONS), 37 * 19 * 2);
}

TEST_F(PluginTest, ZeroBytesGivesNullAndBadCategoryFails) {
  EXPECT_EQ(Alloc(0, MNT_MEMORY_DATA), nullptr);
  MNT_Memory_Allocate_Args a{};
  a.struct_size = MNT_Memory_Allocate_Args_STRUCT_SIZE;
  a.backend = backend();
  a.size_bytes = 8;
  a.category = MNT_MEMORY_ALL;
  EXPECT_THAT(Status(api()->Memory_Allocate(&a)).message(),
              HasSubstr("unknown memory category 100"));
  EXPECT_TRUE(client().Free(nullptr).ok());
}

TEST_F(PluginTest, FreeingForeignOrFreedPointerFails) {
  int host = 0;
  EXPECT_THAT(client().Free(&host).message(),
              HasSubstr("was not allocated by this backend"));
  void* p = Alloc(64, MNT_MEMORY_DATA);
  EXPECT_TRUE(client().Free(p).ok());
  EXPECT_EQ(client().Free(p).code(), MNT_ERROR_INVALID_ARGUMENT);
}

TEST_F(PluginTest, DestroyFreesWhatIsLeft) {
  // A second instance with live allocations and an event, destroyed whole
  // (run under ASan/valgrind this shows up as a leak otherwise).
  MNT_Backend_Create_Args c{};
  c.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  ASSERT_TRUE(Ok(api()->Backend_Create(&c)));
  sdk::BackendClient other(CpuBackendPluginApi(), c.backend);
  sdk::DeviceBuffer buffer;
  ASSERT_TRUE(other.Allocate(4096, MNT_MEMORY_WEIGHTS, &buffer).ok());
  MNT_Event_Create_Args e{};
  e.struct_size = MNT_Event_Create_Args_STRUCT_SIZE;
  e.backend = c.backend;
  ASSERT_TRUE(Ok(api()->Event_Create(&e)));
  int64_t cur = 0;
  ASSERT_TRUE(other.GetStats(MNT_MEMORY_ALL, &cur, nullptr).ok());
  EXPECT_EQ(cur, 4096);
  // Release the handle without freeing: Backend_Destroy owns it now.
  (void)buffer.data();
  MNT_Backend_Destroy_Args d{};
  d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  d.backend = c.backend;
  new (&buffer) sdk::DeviceBuffer();  // forget the pointer, no Free call
  EXPECT_TRUE(Ok(api()->Backend_Destroy(&d)));
}

TEST_F(PluginTest, CopiesRoundTripAndCheckDeviceRanges) {
  std::vector<float> host = {1, 2, 3, 4, 5, 6}, back(6, 0);
  void* a = Alloc(24, MNT_MEMORY_DATA);
  void* b = Alloc(24, MNT_MEMORY_DATA);
  ASSERT_TRUE(client().ToDevice(a, host.data(), 24).ok());
  ASSERT_TRUE(client().Copy(b, a, 24, MNT_COPY_DEVICE_TO_DEVICE).ok());
  ASSERT_TRUE(client().ToHost(back.data(), b, 24).ok());
  EXPECT_EQ(back, host);
  // Offsets inside an allocation are device pointers too.
  ASSERT_TRUE(client().ToHost(back.data(), static_cast<char*>(b) + 8, 16).ok());
  EXPECT_EQ(back[0], 3.0f);
  EXPECT_THAT(client().ToDevice(a, host.data(), 28).message(),
              HasSubstr("Memory_Copy: dst"));
  EXPECT_THAT(client().ToHost(back.data(), host.data(), 4).message(),
              HasSubstr("not inside memory allocated by this backend"));
  EXPECT_THAT(client().Copy(a, b, 4, static_cast<MNT_CopyKind>(9)).message(),
              HasSubstr("unknown copy kind 9"));
}

TEST_F(PluginTest, EventsMeasureElapsedTime) {
  MNT_Event_Create_Args c{};
  c.struct_size = MNT_Event_Create_Args_STRUCT_SIZE;
  c.backend = backend();
  ASSERT_TRUE(Ok(api()->Event_Create(&c)));
  MNT_Event* start = c.event;
  ASSERT_TRUE(Ok(api()->Event_Create(&c)));
  MNT_Event* end = c.event;

  MNT_Event_ElapsedTime_Args t{};
  t.struct_size = MNT_Event_ElapsedTime_Args_STRUCT_SIZE;
  t.backend = backend();
  t.start = start;
  t.end = end;
  const sdk::Status unrecorded = Status(api()->Event_ElapsedTime(&t));
  EXPECT_EQ(unrecorded.code(), MNT_ERROR_FAILED_PRECONDITION);
  EXPECT_THAT(unrecorded.message(), HasSubstr("start event was never recorded"));

  MNT_Event_Record_Args r{};
  r.struct_size = MNT_Event_Record_Args_STRUCT_SIZE;
  r.backend = backend();
  r.event = start;
  ASSERT_TRUE(Ok(api()->Event_Record(&r)));
  // Some work in between: a GEMM.
  MNT_Tensor a = Upload(Random(64 * 64), MNT_DTYPE_F32, {64, 64});
  MNT_Tensor out = Empty(MNT_DTYPE_F32, {64, 64});
  MNT_GemmParams g{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};
  ASSERT_TRUE(Run(MNT_OP_GEMM, {a, a}, {out}, &g).ok());
  r.event = end;
  ASSERT_TRUE(Ok(api()->Event_Record(&r)));
  ASSERT_TRUE(Ok(api()->Event_ElapsedTime(&t)));
  EXPECT_GE(t.milliseconds, 0.0);
  EXPECT_LT(t.milliseconds, 10000.0);

  MNT_Event_Destroy_Args d{};
  d.struct_size = MNT_Event_Destroy_Args_STRUCT_SIZE;
  d.backend = backend();
  d.event = start;
  ASSERT_TRUE(Ok(api()->Event_Destroy(&d)));
  EXPECT_THAT(Status(api()->Event_Destroy(&d)).message(),
              HasSubstr("not a live event of this backend"));
  d.event = end;
  ASSERT_TRUE(Ok(api()->Event_Destroy(&d)));
  d.event = nullptr;
  EXPECT_TRUE(Ok(api()->Event_Destroy(&d)));
}

TEST_F(PluginTest, OpSupportCoversEveryOp) {
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = backend();
  for (int op = MNT_OP_FILL; op <= MNT_OP_TENSOR_STATS; ++op) {
    a.op = static_cast<MNT_Op>(op);
    ASSERT_TRUE(Ok(api()->Backend_GetOpSupport(&a)));
    EXPECT_EQ(a.supported, 1) << op;
  }
  a.op = static_cast<MNT_Op>(999);
  ASSERT_TRUE(Ok(api()->Backend_GetOpSupport(&a)));
  EXPECT_EQ(a.supported, 0);
}

TEST_F(PluginTest, RunErrorsAreOneClearLine) {
  MNT_Tensor a = Upload(Random(4 * 3), MNT_DTYPE_F32, {4, 3});
  MNT_Tensor b = Upload(Random(5 * 3), MNT_DTYPE_F32, {5, 3});
  MNT_Tensor c = Empty(MNT_DTYPE_F32, {4, 3});
  MNT_GemmParams g{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f, MNT_COMPUTE_F32};

  sdk::Status s = Run(MNT_OP_GEMM, {a, b}, {c}, &g);
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "GEMM: in[1] B is f32[5,3], expected [K=3, N]");

  s = Run(MNT_OP_GEMM, {a}, {c}, &g);
  EXPECT_EQ(s.message(), "GEMM: got 1 inputs, expected 2 to 3");

  s = Run(MNT_OP_GEMM, {a, b}, {c}, nullptr);
  EXPECT_EQ(s.message(), "GEMM: params (MNT_GemmParams) is NULL");

  s = Run(static_cast<MNT_Op>(77), {a}, {c});
  EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED);
  EXPECT_EQ(s.message(), "Backend_Run: unknown op 77");

  MNT_Tensor ids = UploadI32({0, 1, 2, 3}, {4});
  MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  s = Run(MNT_OP_ADD, {ids}, {c}, &add);
  EXPECT_EQ(s.message(),
            "ADD: in[0] a is i32[4], expected a float dtype (f32, f16 or bf16)");

  // Host memory is not device memory, even on the CPU.
  std::vector<float> host(12);
  MNT_Tensor host_view = sdk::MakeTensor(host.data(), MNT_DTYPE_F32, {4, 3});
  s = Run(MNT_OP_ADD, {host_view}, {c}, &add);
  EXPECT_THAT(s.message(), HasSubstr("ADD: in[0] f32[4,3] (48 bytes at"));
  EXPECT_THAT(s.message(), HasSubstr("is not inside memory allocated by this backend"));

  // A view running past the end of its allocation.
  MNT_Tensor too_long = a;
  too_long.dims[0] = 5;
  s = Run(MNT_OP_ADD, {too_long}, {c}, &add);
  EXPECT_THAT(s.message(), HasSubstr("not inside memory allocated"));

  MNT_Tensor bad_rank = a;
  bad_rank.rank = 7;
  s = Run(MNT_OP_ADD, {bad_rank}, {c}, &add);
  EXPECT_EQ(s.message(), "ADD: in[0] has rank 7, expected 0..6");
  for (const sdk::Status& e : {s}) {
    EXPECT_EQ(e.message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace mnt::cpu

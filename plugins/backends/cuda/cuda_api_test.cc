// The cuda backend's API outside the kernels: the no-device error (this part
// runs everywhere, CI included), device info, the caching allocator's stats
// and foreign-pointer errors, copies, events, op support for ops it does not
// implement, and device-side checks surfacing at the next sync point.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {
namespace {

using testing::DualBackend;
using testing::NoDeviceReason;

const MNT_Backend_Api* Api() { return CudaBackendPluginApi()->backend; }

sdk::Status S(MNT_Error* e) { return sdk::StatusFromPluginError(CudaBackendPluginApi(), e); }

TEST(CudaApiTest, PluginDescriptor) {
  const MNT_Plugin_Api* api = CudaBackendPluginApi();
  EXPECT_STREQ(api->name, "cuda");
  EXPECT_EQ(api->kind, MNT_PLUGIN_KIND_BACKEND);
  ASSERT_NE(api->backend, nullptr);
  EXPECT_NE(api->backend->Event_Create, nullptr);
}

TEST(CudaApiTest, CreateWithoutDeviceIsOneClearLine) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  const sdk::Status s = S(Api()->Backend_Create(&a));
  if (NoDeviceReason().empty()) {
    ASSERT_TRUE(s.ok()) << s.message();
    MNT_Backend_Destroy_Args d{};
    d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    d.backend = a.backend;
    EXPECT_TRUE(S(Api()->Backend_Destroy(&d)).ok());
    return;
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), MNT_ERROR_UNAVAILABLE);
  EXPECT_EQ(s.message().rfind("cuda backend: no CUDA device available (cudaGetDeviceCount: ", 0), 0u)
      << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

TEST(CudaApiTest, UnknownOptionIsAnError) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  a.options = "threads=4";
  const sdk::Status s = S(Api()->Backend_Create(&a));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown key 'threads'"), std::string::npos) << s.message();
}

TEST(CudaApiTest, InfoAllocatorCopiesEvents) {
  MNT_SKIP_WITHOUT_GPU();
  DualBackend d;
  d.Init();
  const sdk::BackendClient& c = d.cuda();
  MNT_Backend_GetInfo_Args info{};
  info.struct_size = MNT_Backend_GetInfo_Args_STRUCT_SIZE;
  info.backend = c.backend();
  ASSERT_TRUE(S(Api()->Backend_GetInfo(&info)).ok());
  EXPECT_EQ(std::string(info.device_name).rfind("cuda:0 (", 0), 0u) << info.device_name;
  EXPECT_GT(info.total_memory_bytes, 0);
  EXPECT_EQ(info.host_addressable, 0);

  {
    sdk::DeviceBuffer w, g;
    ASSERT_TRUE(c.Allocate(1000, MNT_MEMORY_WEIGHTS, &w).ok());
    ASSERT_TRUE(c.Allocate(3 << 20, MNT_MEMORY_GRADIENTS, &g).ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data()) % 256, 0u);
    int64_t cur, peak;
    ASSERT_TRUE(c.GetStats(MNT_MEMORY_WEIGHTS, &cur, &peak).ok());
    EXPECT_EQ(cur, 1000);
    ASSERT_TRUE(c.GetStats(MNT_MEMORY_GRADIENTS, &cur, &peak).ok());
    EXPECT_EQ(cur, 3 << 20);
    // Round trip through the device.
    std::vector<uint8_t> host(1000), back(1000);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i * 7);
    ASSERT_TRUE(c.ToDevice(w.data(), host.data(), host.size()).ok());
    ASSERT_TRUE(c.ToHost(back.data(), w.data(), back.size()).ok());
    EXPECT_EQ(host, back);
    // Out of bounds copies and foreign pointers are refused.
    EXPECT_FALSE(c.ToHost(back.data(), w.data(), 1001).ok());
    int local = 0;
    const sdk::Status s = c.Free(&local);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("was not allocated by this backend"), std::string::npos);
    void* p = w.data();
    w.Reset();
    EXPECT_FALSE(c.Free(p).ok());  // double free
    // The freed block is reused for the same size class.
    sdk::DeviceBuffer again;
    ASSERT_TRUE(c.Allocate(900, MNT_MEMORY_ACTIVATIONS, &again).ok());
    EXPECT_EQ(again.data(), p);
  }
  int64_t cur, peak;
  ASSERT_TRUE(c.GetStats(MNT_MEMORY_ALL, &cur, &peak).ok());
  EXPECT_EQ(cur, 0);
  EXPECT_EQ(peak, 1000 + (3 << 20));

  MNT_Event_Create_Args e1{}, e2{};
  e1.struct_size = e2.struct_size = MNT_Event_Create_Args_STRUCT_SIZE;
  e1.backend = e2.backend = c.backend();
  ASSERT_TRUE(S(Api()->Event_Create(&e1)).ok());
  ASSERT_TRUE(S(Api()->Event_Create(&e2)).ok());
  MNT_Event_Record_Args r{};
  r.struct_size = MNT_Event_Record_Args_STRUCT_SIZE;
  r.backend = c.backend();
  r.event = e1.event;
  ASSERT_TRUE(S(Api()->Event_Record(&r)).ok());
  r.event = e2.event;
  ASSERT_TRUE(S(Api()->Event_Record(&r)).ok());
  MNT_Event_ElapsedTime_Args t{};
  t.struct_size = MNT_Event_ElapsedTime_Args_STRUCT_SIZE;
  t.backend = c.backend();
  t.start = e1.event;
  t.end = e2.event;
  ASSERT_TRUE(S(Api()->Event_ElapsedTime(&t)).ok());
  EXPECT_GE(t.milliseconds, 0.0);
  for (MNT_Event* e : {e1.event, e2.event}) {
    MNT_Event_Destroy_Args x{};
    x.struct_size = MNT_Event_Destroy_Args_STRUCT_SIZE;
    x.backend = c.backend();
    x.event = e;
    EXPECT_TRUE(S(Api()->Event_Destroy(&x)).ok());
  }
}

TEST(CudaApiTest, UnimplementedOpsAreReportedNotRun) {
  MNT_SKIP_WITHOUT_GPU();
  DualBackend d;
  d.Init();
  for (int op = 1; op <= MNT_OP_BATCHNORM_BACKWARD; ++op) {  // every ABI 1.3 op
    MNT_Backend_GetOpSupport_Args a{};
    a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    a.backend = d.cuda().backend();
    a.op = static_cast<MNT_Op>(op);
    ASSERT_TRUE(S(Api()->Backend_GetOpSupport(&a)).ok());
    EXPECT_EQ(a.supported, 1) << op;
  }
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = d.cuda().backend();
  a.op = static_cast<MNT_Op>(999);
  ASSERT_TRUE(S(Api()->Backend_GetOpSupport(&a)).ok());
  EXPECT_EQ(a.supported, 0);
  const sdk::Status s = d.cuda().Run(static_cast<MNT_Op>(999), {}, {});
  EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED) << s.message();
}

// Uploads go through pinned slots and return without a stream sync: the
// host buffer is rewritten right after each call, small uploads cycle
// through the slots many times over, a large one spans several slots, two
// uploads to one place land in call order.
TEST(CudaApiTest, StagedUploadsReadTheHostBufferBeforeReturning) {
  MNT_SKIP_WITHOUT_GPU();
  DualBackend d;
  d.Init();
  const sdk::BackendClient& c = d.cuda();
  const size_t big = 3 * (size_t{4} << 20) + 1237;  // > 3 slots
  sdk::DeviceBuffer large, small;
  ASSERT_TRUE(c.Allocate(big, MNT_MEMORY_DATA, &large).ok());
  const int uploads = 64, each = 1000;
  ASSERT_TRUE(c.Allocate(uploads * each, MNT_MEMORY_DATA, &small).ok());
  std::vector<uint8_t> host(big);
  for (size_t i = 0; i < big; ++i) host[i] = static_cast<uint8_t>(i * 131 + 7);
  const std::vector<uint8_t> want_large = host;
  ASSERT_TRUE(c.ToDevice(large.data(), host.data(), big).ok());
  std::fill(host.begin(), host.end(), 0xEE);  // the copy must not see this
  std::vector<uint8_t> chunk(each), want_small(uploads * each);
  for (int u = 0; u < uploads; ++u) {
    for (int i = 0; i < each; ++i) chunk[i] = static_cast<uint8_t>(u * 3 + i);
    std::copy(chunk.begin(), chunk.end(), want_small.begin() + u * each);
    ASSERT_TRUE(c.ToDevice(static_cast<uint8_t*>(small.data()) + u * each, chunk.data(),
                           each).ok());
    std::fill(chunk.begin(), chunk.end(), 0xEE);
  }
  // Call order on one destination: the second upload wins.
  std::vector<uint8_t> first(each, 1), second(each, 2);
  ASSERT_TRUE(c.ToDevice(small.data(), first.data(), each).ok());
  ASSERT_TRUE(c.ToDevice(small.data(), second.data(), each).ok());
  std::fill(want_small.begin(), want_small.begin() + each, 2);
  std::vector<uint8_t> back(big);
  ASSERT_TRUE(c.ToHost(back.data(), large.data(), big).ok());
  EXPECT_TRUE(back == want_large);
  back.resize(uploads * each);
  ASSERT_TRUE(c.ToHost(back.data(), small.data(), back.size()).ok());
  EXPECT_TRUE(back == want_small);
}

// An error some other CUDA call left in the runtime's last-error slot (here
// a failed cudaMalloc in the test itself) is not this backend's: ops that
// launch nothing, and ops that launch fine, still succeed.
TEST(CudaApiTest, StaleRuntimeErrorIsNotBlamedOnTheNextOp) {
  MNT_SKIP_WITHOUT_GPU();
  DualBackend d;
  d.Init();
  auto empty = d.Poisoned(MNT_DTYPE_F32, {0});
  auto some = d.Poisoned(MNT_DTYPE_F32, {1000});
  const MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, 2.0};
  void* huge = nullptr;
  ASSERT_NE(cudaMalloc(&huge, size_t{1} << 62), cudaSuccess);  // leaves an error
  const sdk::Status nothing = d.RunCuda(MNT_OP_FILL, {}, {empty.get()}, &p);
  const sdk::Status launched = d.RunCuda(MNT_OP_FILL, {}, {some.get()}, &p);
  (void)cudaGetLastError();
  EXPECT_TRUE(nothing.ok()) << nothing.message();
  EXPECT_TRUE(launched.ok()) << launched.message();
  EXPECT_EQ(d.Download(*some, true), std::vector<float>(1000, 2.0f));
}

TEST(CudaApiTest, BadEmbeddingIdSurfacesAtSynchronize) {
  MNT_SKIP_WITHOUT_GPU();
  DualBackend d;
  d.Init();
  auto table = d.Upload(std::vector<float>(12, 1.0f), MNT_DTYPE_F32, {4, 3});
  auto ids = d.UploadI32({0, 7}, {2});
  auto out = d.Poisoned(MNT_DTYPE_F32, {2, 3});
  ASSERT_TRUE(d.RunCuda(MNT_OP_EMBEDDING_FORWARD, {table.get(), ids.get()}, {out.get()}).ok());
  const sdk::Status s = d.cuda().Synchronize();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside [0, V)"), std::string::npos) << s.message();
  EXPECT_TRUE(d.cuda().Synchronize().ok());  // reported once
}

}  // namespace
}  // namespace mnt::cuda

// The common plugin around the smallest backend class: one op supported
// (FILL), every other op declared unsupported, host memory. Checks what every
// backend gets from backend_plugin.h without writing it: the support query
// and dispatch follow Supports(), handles of another backend are refused,
// and the allocator's statistics and events work through the C table.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/backend_plugin.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {
namespace {

class MallocAllocator : public Allocator {
 public:
  ~MallocAllocator() override { ReleaseAll(); }

 protected:
  sdk::Status Obtain(size_t size_bytes, void** data, size_t* reserved) override {
    *reserved = (size_bytes + 255) / 256 * 256;
    *data = std::aligned_alloc(256, *reserved);
    return sdk::Status::Ok();
  }
  void Release(void* data, size_t) override { std::free(data); }
};

// kName differs per instantiation so the two plugins below are told apart.
template <int kId>
class FillOnlyBackend {
 public:
  static constexpr const char* kName = kId == 0 ? "fill_only" : "other";
  static constexpr bool Supports(MNT_Op op) { return op == MNT_OP_FILL; }
  using Event = int;

  static sdk::Status Create(const char*, int32_t, std::unique_ptr<FillOnlyBackend>* out) {
    *out = std::make_unique<FillOnlyBackend>();
    return sdk::Status::Ok();
  }
  sdk::Status Activate(const char*) { return sdk::Status::Ok(); }
  DeviceInfo Info() const { return DeviceInfo{"host", 0, true}; }
  Allocator& allocator() { return allocator_; }
  sdk::Status Copy(void* dst, const void* src, size_t n, MNT_CopyKind) {
    std::memmove(dst, src, n);
    return sdk::Status::Ok();
  }
  sdk::Status Synchronize() { return sdk::Status::Ok(); }
  sdk::Status CreateEvent(Event* e) { *e = 0; return sdk::Status::Ok(); }
  sdk::Status RecordEvent(Event* e) { *e = ++clock_; return sdk::Status::Ok(); }
  sdk::Status ElapsedMilliseconds(const Event& a, const Event& b, double* ms) {
    *ms = b - a;
    return sdk::Status::Ok();
  }
  sdk::Status DestroyEvent(Event*) { return sdk::Status::Ok(); }

  sdk::Status Fill(const FillCall& c) {
    float* out = c.out.f32();
    for (int64_t i = 0; i < c.n; ++i) out[i] = static_cast<float>(c.value);
    return sdk::Status::Ok();
  }

 private:
  MallocAllocator allocator_;
  int clock_ = 0;
};

const MNT_Plugin_Api* FillOnlyApi() {
  return BackendPlugin<FillOnlyBackend<0>>::Api("test backend: FILL only");
}
const MNT_Plugin_Api* OtherApi() {
  return BackendPlugin<FillOnlyBackend<1>>::Api("another test backend");
}

// Supports() allows FILL and ADD, but this "device" runs only FILL: the
// per-instance DeviceSupports hook narrows Backend_GetOpSupport's answer.
class DeviceLimitedBackend : public FillOnlyBackend<2> {
 public:
  static constexpr const char* kName = "device_limited";
  static constexpr bool Supports(MNT_Op op) { return op == MNT_OP_FILL || op == MNT_OP_ADD; }
  static sdk::Status Create(const char*, int32_t, std::unique_ptr<DeviceLimitedBackend>* out) {
    *out = std::make_unique<DeviceLimitedBackend>();
    return sdk::Status::Ok();
  }
  bool DeviceSupports(MNT_Op op) const { return op != MNT_OP_ADD; }
  sdk::Status Add(const AddCall&) { return sdk::Unimplemented("ADD: not on this device"); }
};

const MNT_Plugin_Api* DeviceLimitedApi() {
  return BackendPlugin<DeviceLimitedBackend>::Api("test backend: ADD not on this device");
}

MNT_Backend* Create(const MNT_Plugin_Api* plugin) {
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  EXPECT_TRUE(sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Create(&a)).ok());
  return a.backend;
}

void Destroy(const MNT_Plugin_Api* plugin, MNT_Backend* backend) {
  MNT_Backend_Destroy_Args d{};
  d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  d.backend = backend;
  EXPECT_TRUE(sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Destroy(&d)).ok());
}

int32_t Supported(const MNT_Plugin_Api* plugin, MNT_Backend* backend, int op) {
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = backend;
  a.op = static_cast<MNT_Op>(op);
  EXPECT_TRUE(
      sdk::StatusFromPluginError(plugin, plugin->backend->Backend_GetOpSupport(&a)).ok());
  return a.supported;
}

TEST(BackendPluginTest, DescriptorComesFromTheClass) {
  const MNT_Plugin_Api* p = FillOnlyApi();
  EXPECT_EQ(p->kind, MNT_PLUGIN_KIND_BACKEND);
  EXPECT_STREQ(p->name, "fill_only");
  EXPECT_STREQ(p->description, "test backend: FILL only");
  EXPECT_EQ(p->backend->struct_size, MNT_Backend_Api_STRUCT_SIZE);
  EXPECT_NE(p->backend->Event_Destroy, nullptr);
}

TEST(BackendPluginTest, DeviceSupportsNarrowsGetOpSupport) {
  const MNT_Plugin_Api* plugin = DeviceLimitedApi();
  MNT_Backend* backend = Create(plugin);
  for (MNT_Op op : sdk::kAllOps) {
    EXPECT_EQ(Supported(plugin, backend, op), op == MNT_OP_FILL ? 1 : 0) << sdk::OpName(op);
  }
  EXPECT_EQ(Supported(plugin, backend, 999), 0);
  Destroy(plugin, backend);
}

TEST(BackendPluginTest, UnsupportedOpsAreReportedAndRefused) {
  const MNT_Plugin_Api* plugin = FillOnlyApi();
  MNT_Backend* backend = Create(plugin);
  for (MNT_Op op : sdk::kAllOps) {
    EXPECT_EQ(Supported(plugin, backend, op), op == MNT_OP_FILL ? 1 : 0) << sdk::OpName(op);
  }
  EXPECT_EQ(Supported(plugin, backend, 999), 0);

  sdk::BackendClient client(plugin, backend);
  sdk::DeviceBuffer buffer;
  ASSERT_TRUE(client.Allocate(3 * sizeof(float), MNT_MEMORY_DATA, &buffer).ok());
  const MNT_Tensor t = sdk::MakeTensor(buffer.data(), MNT_DTYPE_F32, {3});
  const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 2.5};
  ASSERT_TRUE(client.Run(MNT_OP_FILL, {}, {t}, &fill).ok());
  std::vector<float> host(3, 0.0f);
  ASSERT_TRUE(client.ToHost(host.data(), buffer.data(), sizeof(float) * 3).ok());
  EXPECT_EQ(host, std::vector<float>(3, 2.5f));

  // The contract is checked before dispatch, whatever the kernel.
  EXPECT_EQ(client.Run(MNT_OP_FILL, {t}, {t}, &fill).message(),
            "FILL: got 1 inputs, expected 0");
  sdk::Status s = client.Run(MNT_OP_SOFTMAX, {t}, {t});
  EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED);
  EXPECT_EQ(s.message(), "Backend_Run: op 8 (SOFTMAX) is not implemented by the "
                         "fill_only backend");
  s = client.Run(static_cast<MNT_Op>(77), {t}, {t});
  EXPECT_EQ(s.code(), MNT_ERROR_UNIMPLEMENTED);
  EXPECT_EQ(s.message(), "Backend_Run: unknown op 77");
  buffer.Reset();
  Destroy(plugin, backend);
}

TEST(BackendPluginTest, HandlesOfAnotherBackendAreRefused) {
  MNT_Backend* other = Create(OtherApi());
  const MNT_Plugin_Api* plugin = FillOnlyApi();
  MNT_Backend_Synchronize_Args a{};
  a.struct_size = MNT_Backend_Synchronize_Args_STRUCT_SIZE;
  a.backend = other;
  const sdk::Status s =
      sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Synchronize(&a));
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(),
            "Backend_Synchronize: backend is not a live fill_only backend instance");
  a.backend = nullptr;
  EXPECT_EQ(sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Synchronize(&a))
                .message(),
            "Backend_Synchronize: backend is NULL");
  Destroy(OtherApi(), other);
}

TEST(BackendPluginTest, StatisticsAndEventsGoThroughTheClass) {
  const MNT_Plugin_Api* plugin = FillOnlyApi();
  MNT_Backend* backend = Create(plugin);
  sdk::BackendClient client(plugin, backend);
  sdk::DeviceBuffer a, b;
  ASSERT_TRUE(client.Allocate(100, MNT_MEMORY_WEIGHTS, &a).ok());
  ASSERT_TRUE(client.Allocate(28, MNT_MEMORY_GRADIENTS, &b).ok());
  int64_t current = -1, peak = -1;
  ASSERT_TRUE(client.GetStats(MNT_MEMORY_ALL, &current, &peak).ok());
  EXPECT_EQ(current, 128);
  a.Reset();
  ASSERT_TRUE(client.GetStats(MNT_MEMORY_WEIGHTS, &current, &peak).ok());
  EXPECT_EQ(current, 0);
  EXPECT_EQ(peak, 100);

  const MNT_Backend_Api* api = plugin->backend;
  MNT_Event_Create_Args c{};
  c.struct_size = MNT_Event_Create_Args_STRUCT_SIZE;
  c.backend = backend;
  ASSERT_EQ(api->Event_Create(&c), nullptr);
  MNT_Event* start = c.event;
  ASSERT_EQ(api->Event_Create(&c), nullptr);
  MNT_Event* end = c.event;
  MNT_Event_Record_Args r{};
  r.struct_size = MNT_Event_Record_Args_STRUCT_SIZE;
  r.backend = backend;
  for (MNT_Event* e : {start, end, end}) {
    r.event = e;
    ASSERT_EQ(api->Event_Record(&r), nullptr);
  }
  MNT_Event_ElapsedTime_Args t{};
  t.struct_size = MNT_Event_ElapsedTime_Args_STRUCT_SIZE;
  t.backend = backend;
  t.start = start;
  t.end = end;
  ASSERT_EQ(api->Event_ElapsedTime(&t), nullptr);
  EXPECT_EQ(t.milliseconds, 2.0);  // the class's clock: recorded at 1, then 3
  // `end` stays live: Backend_Destroy releases it and the remaining buffer.
  MNT_Event_Destroy_Args d{};
  d.struct_size = MNT_Event_Destroy_Args_STRUCT_SIZE;
  d.backend = backend;
  d.event = start;
  ASSERT_EQ(api->Event_Destroy(&d), nullptr);
  new (&b) sdk::DeviceBuffer();  // forget the pointer; Backend_Destroy frees it
  Destroy(plugin, backend);
}

}  // namespace
}  // namespace mnt::backend

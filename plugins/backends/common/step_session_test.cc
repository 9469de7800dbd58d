// Backend_StepBegin/StepEnd through the common plugin, around a host backend
// of two ops (FILL, ADD) whose "graph" is a counter: capture runs the ops it
// is handed, a replay runs them again. What is checked is what a backend
// gets without writing it: ops deferred to StepEnd give the results of ops
// run at once (also when the step copies to the host halfway), a step is
// replayed only when it equals the captured one, a bad call fails at its
// Backend_Run, and a failed capture leaves the steps eager.
#include "plugins/backends/common/step_session.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
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

// Hooks are counted per process: one test at a time drives one instance.
struct GraphLog {
  int captures = 0, replays = 0;
  bool fail_capture = false;
};
GraphLog graph_log;

// Everything but the name and the hooks.
template <typename Self>
class HostBackend {
 public:
  static constexpr bool Supports(MNT_Op op) { return op == MNT_OP_FILL || op == MNT_OP_ADD; }
  using Event = int;

  static sdk::Status Create(const char*, int32_t, std::unique_ptr<Self>* out) {
    *out = std::make_unique<Self>();
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
  sdk::Status RecordEvent(Event* e) { *e = 1; return sdk::Status::Ok(); }
  sdk::Status ElapsedMilliseconds(const Event&, const Event&, double* ms) {
    *ms = 0;
    return sdk::Status::Ok();
  }
  sdk::Status DestroyEvent(Event*) { return sdk::Status::Ok(); }

  sdk::Status Fill(const FillCall& c) {
    float* out = c.out.f32();
    for (int64_t i = 0; i < c.n; ++i) out[i] = static_cast<float>(c.value);
    return sdk::Status::Ok();
  }
  sdk::Status Add(const AddCall& c) {
    const float* a = c.a.f32();
    const float* b = c.b.f32();
    float* out = c.out.f32();
    for (int64_t i = 0; i < c.n; ++i) out[i] = c.alpha * a[i] + (b ? c.beta * b[i] : 0.0f);
    return sdk::Status::Ok();
  }

 private:
  MallocAllocator allocator_;
};

class PlainBackend : public HostBackend<PlainBackend> {
 public:
  static constexpr const char* kName = "plain";
};

// With the hooks of common/step_session.h.
class GraphsBackend : public HostBackend<GraphsBackend> {
 public:
  static constexpr const char* kName = "graphs";
  bool StepGraphsEnabled() const { return true; }
  sdk::Status CaptureStep(const std::function<sdk::Status()>& issue, std::string* why_not) {
    if (graph_log.fail_capture) {
      *why_not = "test: capture refused";
      return sdk::Status::Ok();
    }
    ++graph_log.captures;
    return issue();
  }
  sdk::Status ReplayStep(const std::function<sdk::Status()>& issue) {
    ++graph_log.replays;
    return issue();
  }
};

static_assert(HasStepGraphs<GraphsBackend>::value);
static_assert(!HasStepGraphs<PlainBackend>::value);

using GraphsPlugin = BackendPlugin<GraphsBackend>;
using PlainPlugin = BackendPlugin<PlainBackend>;

// One instance and two buffers x, y of n floats; a "step" is a random
// chain of FILL and ADD over them, the same chain for the same seed.
class StepSessionTest : public ::testing::Test {
 protected:
  static constexpr int kN = 37;

  void Open(const MNT_Plugin_Api* plugin) {
    plugin_ = plugin;
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    ASSERT_TRUE(sdk::StatusFromPluginError(plugin, plugin->backend->Backend_Create(&a)).ok());
    client_ = sdk::BackendClient(plugin, a.backend);
    ASSERT_TRUE(client_.HasStepMarkers());
    ASSERT_TRUE(client_.Allocate(kN * sizeof(float), MNT_MEMORY_DATA, &x_).ok());
    ASSERT_TRUE(client_.Allocate(kN * sizeof(float), MNT_MEMORY_DATA, &y_).ok());
    graph_log = GraphLog{};
  }
  void TearDown() override {
    x_.Reset();
    y_.Reset();
    if (plugin_ == nullptr) return;
    MNT_Backend_Destroy_Args d{};
    d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    d.backend = client_.backend();
    EXPECT_TRUE(sdk::StatusFromPluginError(plugin_, plugin_->backend->Backend_Destroy(&d)).ok());
  }

  MNT_Tensor X() const { return sdk::MakeTensor(x_.data(), MNT_DTYPE_F32, {kN}); }
  MNT_Tensor Y() const { return sdk::MakeTensor(y_.data(), MNT_DTYPE_F32, {kN}); }

  // The ops of one step; `value` goes into the first FILL.
  void Ops(uint64_t seed, float value) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, value};
    ASSERT_TRUE(client_.Run(MNT_OP_FILL, {}, {Y()}, &fill).ok());
    for (int i = 0; i < 12; ++i) {
      const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, u(rng), u(rng)};
      const bool into_x = rng() % 2;
      ASSERT_TRUE(client_.Run(MNT_OP_ADD, {X(), Y()}, {into_x ? X() : Y()}, &add).ok());
      if (i == 5) {  // device to device: stream work, held with the ops
        ASSERT_TRUE(client_.Copy(y_.data(), x_.data(), kN * sizeof(float) / 2,
                                 MNT_COPY_DEVICE_TO_DEVICE).ok());
      }
    }
  }
  std::vector<float> Host(const sdk::DeviceBuffer& b) const {
    std::vector<float> h(kN);
    EXPECT_TRUE(client_.ToHost(h.data(), b.data(), kN * sizeof(float)).ok());
    return h;
  }
  void Reset() {
    const MNT_FillParams one{MNT_FillParams_STRUCT_SIZE, 0.5};
    ASSERT_TRUE(client_.Run(MNT_OP_FILL, {}, {X()}, &one).ok());
  }
  // Runs `values.size()` steps, marked or not; x and y after the last.
  std::pair<std::vector<float>, std::vector<float>> Steps(uint64_t seed,
                                                          const std::vector<float>& values,
                                                          bool marked,
                                                          std::vector<int>* replayed) {
    Reset();
    for (float v : values) {
      if (marked) {
        EXPECT_TRUE(client_.StepBegin().ok());
      }
      Ops(seed, v);
      bool r = false;
      if (marked) {
        EXPECT_TRUE(client_.StepEnd(&r).ok());
      }
      if (replayed) replayed->push_back(r ? 1 : 0);
    }
    return {Host(x_), Host(y_)};
  }

  const MNT_Plugin_Api* plugin_ = nullptr;
  sdk::BackendClient client_;
  sdk::DeviceBuffer x_, y_;
};

TEST_F(StepSessionTest, EqualStepsAreCapturedOnceThenReplayedWithTheSameResults) {
  Open(GraphsPlugin::Api("test"));
  const uint64_t seed = std::random_device{}();
  const std::vector<float> values(6, 0.25f);
  const auto eager = Steps(seed, values, /*marked=*/false, nullptr);
  std::vector<int> replayed;
  const auto marked = Steps(seed, values, /*marked=*/true, &replayed);
  EXPECT_EQ(marked, eager);
  for (float v : marked.first) ASSERT_TRUE(std::isfinite(v));
  // Step 1 eager, step 2 equals it and is captured, steps 3-6 replay.
  EXPECT_EQ(replayed, (std::vector<int>{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(graph_log.captures, 1);
  EXPECT_EQ(graph_log.replays, 4);
  const StepCounts* counts = GraphsPlugin::StepCountsOf(client_.backend());
  ASSERT_NE(counts, nullptr);
  EXPECT_EQ(counts->steps, 6);
  EXPECT_EQ(counts->captured, 1);
  EXPECT_EQ(counts->replayed, 4);
}

TEST_F(StepSessionTest, AChangedFloatParamRunsThatStepEagerlyWithItsOwnValue) {
  Open(GraphsPlugin::Api("test"));
  const uint64_t seed = std::random_device{}();
  // A schedule that changes the first FILL on step 4 only.
  const std::vector<float> values{0.25f, 0.25f, 0.25f, 0.75f, 0.25f};
  const auto eager = Steps(seed, values, false, nullptr);
  std::vector<int> replayed;
  const auto marked = Steps(seed, values, true, &replayed);
  EXPECT_EQ(marked, eager);
  EXPECT_EQ(replayed, (std::vector<int>{0, 0, 1, 0, 1}));
}

TEST_F(StepSessionTest, AHostCopyInsideTheStepSeesTheWorkBeforeItAndEndsTheDeferral) {
  Open(GraphsPlugin::Api("test"));
  const uint64_t seed = std::random_device{}();
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(client_.StepBegin().ok());
    Ops(seed, 0.25f);
    ASSERT_TRUE(client_.StepEnd().ok());
  }
  ASSERT_EQ(graph_log.captures, 1);
  ASSERT_EQ(graph_log.replays, 1);

  // The same ops without markers give the reference for the read.
  Reset();
  Ops(seed, 0.25f);
  const std::vector<float> want_y = Host(y_);
  Ops(seed, 0.25f);
  const std::vector<float> want_x = Host(x_);

  Reset();
  ASSERT_TRUE(client_.StepBegin().ok());
  Ops(seed, 0.25f);
  EXPECT_EQ(Host(y_), want_y);  // the deferred ops ran before the copy
  Ops(seed, 0.25f);              // the rest of this step runs as issued
  EXPECT_EQ(Host(x_), want_x);
  bool replayed = true;
  ASSERT_TRUE(client_.StepEnd(&replayed).ok());
  EXPECT_FALSE(replayed);
  EXPECT_EQ(graph_log.replays, 1);
}

TEST_F(StepSessionTest, AnExtraOpIsADifferentStep) {
  Open(GraphsPlugin::Api("test"));
  const uint64_t seed = std::random_device{}();
  std::vector<int> replayed;
  (void)Steps(seed, std::vector<float>(3, 0.25f), true, &replayed);
  ASSERT_EQ(replayed, (std::vector<int>{0, 0, 1}));
  ASSERT_TRUE(client_.StepBegin().ok());
  Ops(seed, 0.25f);
  const MNT_AddParams twice{MNT_AddParams_STRUCT_SIZE, 2.0f, 0.0f};
  ASSERT_TRUE(client_.Run(MNT_OP_ADD, {X()}, {X()}, &twice).ok());
  bool r = true;
  ASSERT_TRUE(client_.StepEnd(&r).ok());
  EXPECT_FALSE(r);
}

TEST_F(StepSessionTest, ABadCallFailsAtItsRunNotAtStepEnd) {
  Open(GraphsPlugin::Api("test"));
  ASSERT_TRUE(client_.StepBegin().ok());
  const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 1.0};
  EXPECT_EQ(client_.Run(MNT_OP_FILL, {X()}, {Y()}, &fill).message(),
            "FILL: got 1 inputs, expected 0");
  EXPECT_TRUE(client_.StepEnd().ok());
}

TEST_F(StepSessionTest, MarkersMustPair) {
  Open(GraphsPlugin::Api("test"));
  EXPECT_EQ(client_.StepEnd().code(), MNT_ERROR_FAILED_PRECONDITION);
  ASSERT_TRUE(client_.StepBegin().ok());
  EXPECT_EQ(client_.StepBegin().code(), MNT_ERROR_FAILED_PRECONDITION);
  EXPECT_TRUE(client_.StepEnd().ok());
}

TEST_F(StepSessionTest, AFailedCaptureLeavesEveryStepEagerAndCorrect) {
  Open(GraphsPlugin::Api("test"));
  graph_log.fail_capture = true;
  const uint64_t seed = std::random_device{}();
  const std::vector<float> values(5, 0.25f);
  const auto eager = Steps(seed, values, false, nullptr);
  std::vector<int> replayed;
  EXPECT_EQ(Steps(seed, values, true, &replayed), eager);
  EXPECT_EQ(replayed, std::vector<int>(5, 0));
  EXPECT_EQ(graph_log.replays, 0);
}

TEST_F(StepSessionTest, ABackendWithoutHooksAcceptsTheMarkersAndRunsOpsAtOnce) {
  Open(PlainPlugin::Api("test"));
  ASSERT_TRUE(client_.StepBegin().ok());
  const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, 3.0};
  ASSERT_TRUE(client_.Run(MNT_OP_FILL, {}, {X()}, &fill).ok());
  float first = 0;
  ASSERT_TRUE(client_.ToHost(&first, x_.data(), sizeof(float)).ok());
  EXPECT_EQ(first, 3.0f);
  bool r = true;
  ASSERT_TRUE(client_.StepEnd(&r).ok());
  EXPECT_FALSE(r);
}

}  // namespace
}  // namespace mnt::backend

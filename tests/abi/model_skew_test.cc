// ABI 1.6's device loss multiplier (MNT_Model_Backward_Args.
// loss_multiplier_device) across versions, with the in-tree MLP on the CPU
// backend:
//  * a model that says it is 1.5 gets the 1.5 struct and the host float, and
//    the SDK refuses to hand it a device multiplier it would not see;
//  * a 1.6 model gives the same bits with the multiplier as a float, as a
//    device tensor, from a 1.5 host (the shorter struct), and on a backend
//    that says it is 1.5 (which refuses CROSS_ENTROPY's third input, so the
//    model reads the multiplier to the host itself);
//  * since 1.9 capabilities decide, not minors: a 1.9 model that does not
//    advertise MODEL_DEVICE_LOSS_MULTIPLIER is treated as the 1.5 one, and
//    a 1.9 backend that does not advertise CROSS_ENTROPY_GRAD_MULTIPLIER
//    never gets the third CROSS_ENTROPY input;
//  * ABI 1.11's gradient hand-over (MNT_Model_Backward_Args.gradient_ready):
//    a model offering MODEL_GRADIENT_READY gets the 1.11 struct and reports
//    every element once; a 1.10 model (its capabilities without it) gets the
//    1.10 struct and is never called back, whatever the host set; a 1.11
//    model called with a 1.10 host's struct never reads the callback;
//  * ABI 1.12's declared data: only a model that declares it is refused
//    other data before Model_Create.
// The batch (6) and the multiplier are no powers of two, so a different
// rounding of multiplier / batch would show in the bits.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "models/mlp/mlp_model.h"
#include "plugins/abi/mantissa.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/data_kinds.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/model_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/cli/model_defaults.h"

namespace mnt {
namespace {

constexpr int64_t kFeatures = 7, kClasses = 5, kBatch = 6;

// --- A 1.5 model: the MLP with its version set back and its Backward
// recording the struct_size it was handed and which of the later fields
// were set (the host always sends the struct it knows, docs/abi.md section
// 1; what a model did not ask for must be absent: NULL). ---
size_t g_last_backward_struct_size = 0;
bool g_last_backward_had_device_multiplier = false;
bool g_last_backward_had_callback = false;
MNT_Model_Api g_model_api_1_5;
MNT_Plugin_Api g_model_plugin_1_5;

MNT_Error* RecordingBackward(MNT_Model_Backward_Args* args) {
  g_last_backward_struct_size = args->struct_size;
  g_last_backward_had_device_multiplier =
      MNT_HAS_FIELD(args, MNT_Model_Backward_Args, loss_multiplier_device) &&
      args->loss_multiplier_device != nullptr;
  g_last_backward_had_callback = MNT_HAS_FIELD(args, MNT_Model_Backward_Args, gradient_ready) &&
                                 args->gradient_ready != nullptr;
  return mlp::MlpPluginApi()->model->Model_Backward(args);
}

const MNT_Plugin_Api* MlpAs15() {
  g_model_plugin_1_5 = *mlp::MlpPluginApi();
  g_model_plugin_1_5.abi_version.minor_version = 5;
  g_model_api_1_5 = *g_model_plugin_1_5.model;
  g_model_api_1_5.Model_Backward = RecordingBackward;
  g_model_plugin_1_5.model = &g_model_api_1_5;
  return &g_model_plugin_1_5;
}

// --- A 1.5 backend: the CPU backend with its version set back and, as a
// 1.5 backend's common checks do, refusing a third CROSS_ENTROPY input. ---
MNT_Backend_Api g_backend_api_1_5;
MNT_Plugin_Api g_backend_plugin_1_5;
int g_cross_entropy_calls = 0;

MNT_Error* RunAs15(MNT_Backend_Run_Args* args) {
  if (args->op == MNT_OP_CROSS_ENTROPY) {
    ++g_cross_entropy_calls;
    EXPECT_EQ(args->num_inputs, 2u) << "a 1.5 backend got CROSS_ENTROPY's 1.6 input";
  }
  return cpu::CpuBackendPluginApi()->backend->Backend_Run(args);
}

const MNT_Plugin_Api* CpuAs15() {
  g_backend_plugin_1_5 = *cpu::CpuBackendPluginApi();
  g_backend_plugin_1_5.abi_version.minor_version = 5;
  g_backend_api_1_5 = *g_backend_plugin_1_5.backend;
  g_backend_api_1_5.Backend_Run = RunAs15;
  g_backend_plugin_1_5.backend = &g_backend_api_1_5;
  return &g_backend_plugin_1_5;
}

// --- 1.9 plugins that advertise none of that: the MLP and the CPU backend
// at this minor with an empty capabilities extension (the model recording
// its struct_size, the backend checking CROSS_ENTROPY's inputs as above). ---
MNT_Capabilities_Extension g_no_capabilities = sdk::MakeCapabilitiesExtension(nullptr, 0);
MNT_Model_Api g_model_api_1_9;
MNT_Plugin_Api g_model_plugin_1_9;
MNT_Backend_Api g_backend_api_1_9;
MNT_Plugin_Api g_backend_plugin_1_9;

// The in-tree MLP with its Model_Backward recording the struct it gets,
// built in `plugin`/`api` (static storage: the harness keeps the pointer),
// reporting ABI minor `minor` and the extension chain `extensions`.
const MNT_Plugin_Api* RecordingMlpAs(MNT_Plugin_Api* plugin, MNT_Model_Api* api, int32_t minor,
                                     MNT_Extension_Base* extensions) {
  *plugin = *mlp::MlpPluginApi();
  plugin->abi_version.minor_version = minor;
  plugin->extension_start = extensions;
  *api = *plugin->model;
  api->Model_Backward = RecordingBackward;
  plugin->model = api;
  return plugin;
}

const MNT_Plugin_Api* MlpAs19WithoutCapabilities() {
  return RecordingMlpAs(&g_model_plugin_1_9, &g_model_api_1_9, MNT_ABI_MINOR,
                        &g_no_capabilities.header.base);
}

const MNT_Plugin_Api* CpuAs19WithoutCapabilities() {
  g_backend_plugin_1_9 = *cpu::CpuBackendPluginApi();
  g_backend_plugin_1_9.abi_version.minor_version = MNT_ABI_MINOR;
  g_backend_plugin_1_9.extension_start = &g_no_capabilities.header.base;
  g_backend_api_1_9 = *g_backend_plugin_1_9.backend;
  g_backend_api_1_9.Backend_Run = RunAs15;
  g_backend_plugin_1_9.backend = &g_backend_api_1_9;
  return &g_backend_plugin_1_9;
}

// --- A 1.10 model: the MLP at minor 10 advertising what a 1.10 MLP did
// (no MODEL_GRADIENT_READY), recording its struct_size. And the MLP as it
// is, recording its struct_size. ---
const int32_t kCapabilities110[] = {MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER,
                                    MNT_CAPABILITY_MODEL_FP8_GEMMS};
MNT_Capabilities_Extension g_capabilities_1_10 =
    sdk::MakeCapabilitiesExtension(kCapabilities110);
MNT_Model_Api g_model_api_1_10;
MNT_Plugin_Api g_model_plugin_1_10;
MNT_Model_Api g_model_api_recording;
MNT_Plugin_Api g_model_plugin_recording;

const MNT_Plugin_Api* MlpAs110() {
  return RecordingMlpAs(&g_model_plugin_1_10, &g_model_api_1_10, 10,
                        &g_capabilities_1_10.header.base);
}

const MNT_Plugin_Api* RecordingMlp() {
  const MNT_Plugin_Api* mlp = mlp::MlpPluginApi();
  return RecordingMlpAs(&g_model_plugin_recording, &g_model_api_recording,
                        mlp->abi_version.minor_version, mlp->extension_start);
}

// A gradient_ready callback counting its reports per element.
struct ReadyCounts {
  std::vector<std::vector<int>> times;
  int64_t calls = 0;
  bool bad = false;  // param or range out of bounds
  static void Callback(void* user_data, int64_t param, int64_t first, int64_t count) {
    auto* self = static_cast<ReadyCounts*>(user_data);
    ++self->calls;
    if (param < 0 || param >= static_cast<int64_t>(self->times.size()) || first < 0 ||
        count < 1 || first + count > static_cast<int64_t>(self->times[param].size())) {
      self->bad = true;
      return;
    }
    for (int64_t j = first; j < first + count; ++j) ++self->times[param][j];
  }
  bool EachOnce() const {
    for (const auto& t : times)
      for (int n : t)
        if (n != 1) return false;
    return !bad;
  }
};

using Grads = std::vector<std::vector<float>>;

// One MLP instance on one backend instance, fp32, with random parameters,
// inputs and targets (the same for every instance made with one seed).
class Harness {
 public:
  Harness(const MNT_Plugin_Api* backend, const MNT_Plugin_Api* model, uint32_t seed) {
    std::mt19937 rng(seed);
    Check(sdk::BackendInstance::Create(backend, "threads=1", &backend_));
    client_ = backend_->client();
    sdk::ModelSetup setup;
    setup.options = "hidden=9";
    setup.backend = &backend_->client();
    setup.data_spec.input_dtype = MNT_DTYPE_F32;
    setup.data_spec.input_rank = 1;
    setup.data_spec.input_dims[0] = kFeatures;
    setup.data_spec.num_classes = kClasses;
    setup.data_spec.targets_per_example = 1;
    setup.precision.weight_dtype = MNT_DTYPE_F32;
    setup.precision.gradient_dtype = MNT_DTYPE_F32;
    setup.precision.activation_dtype = MNT_DTYPE_F32;
    setup.precision.matmul_compute = MNT_COMPUTE_F32;
    setup.max_batch_size = kBatch;
    Check(sdk::ModelClient::Create(model, setup, &model_));
    int64_t n = 0;
    Check(model_.ParamCount(&n));
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (int64_t i = 0; i < n; ++i) {
      sdk::ParamSpec spec;
      Check(model_.GetParamSpec(i, &spec));
      int64_t count = 1;
      for (int64_t d : spec.dims) count *= d;
      std::vector<float> values(static_cast<size_t>(count));
      for (float& v : values) v = normal(rng);
      params_.push_back(Upload(values, spec.dims));
      grads_.push_back(Upload(std::vector<float>(values.size(), 0.0f), spec.dims));
    }
    std::vector<float> x(kFeatures * kBatch);
    for (float& v : x) v = normal(rng);
    inputs_ = Upload(x, {kBatch, kFeatures});
    std::vector<int32_t> t(kBatch);
    for (int32_t& v : t) v = static_cast<int32_t>(rng() % kClasses);
    buffers_.push_back(std::make_unique<sdk::DeviceBuffer>());
    Check(client_.Allocate(sizeof(int32_t) * kBatch, MNT_MEMORY_DATA, buffers_.back().get()));
    Check(client_.ToDevice(buffers_.back()->data(), t.data(), sizeof(int32_t) * kBatch));
    targets_ = sdk::MakeTensor(buffers_.back()->data(), MNT_DTYPE_I32, {kBatch});
    loss_ = Upload({0.0f}, {1});
  }
  ~Harness() {
    model_.Reset();  // before the memory and the backend instance
    buffers_.clear();
  }

  MNT_Tensor Upload(const std::vector<float>& values, const std::vector<int64_t>& dims) {
    buffers_.push_back(std::make_unique<sdk::DeviceBuffer>());
    Check(client_.Allocate(values.size() * sizeof(float), MNT_MEMORY_DATA,
                           buffers_.back().get()));
    Check(client_.ToDevice(buffers_.back()->data(), values.data(), values.size() * sizeof(float)));
    return sdk::MakeTensor(buffers_.back()->data(), MNT_DTYPE_F32,
                           static_cast<int32_t>(dims.size()), dims.data());
  }

  void Forward() { Check(model_.Forward(params_, inputs_, targets_, true, loss_)); }

  Grads Download() {
    Check(client_.Synchronize());
    Grads out;
    for (const MNT_Tensor& g : grads_) {
      std::vector<float> v(static_cast<size_t>(sdk::NumElements(g)));
      Check(client_.ToHost(v.data(), g.data, v.size() * sizeof(float)));
      out.push_back(std::move(v));
    }
    return out;
  }

  // Model_Backward as a host of `struct_size` (1.5 or 1.6) sends it; a
  // gradient_ready callback is read by the model only when struct_size
  // covers it.
  sdk::Status RawBackward(size_t struct_size, float host, const MNT_Tensor* device,
                          MNT_GradientReadyFn* ready = nullptr, void* ready_data = nullptr) {
    MNT_Model_Backward_Args a{};
    a.struct_size = struct_size;
    a.model = model_.get();
    a.params = params_.data();
    a.num_params = params_.size();
    a.grads = grads_.data();
    a.num_grads = grads_.size();
    a.loss_multiplier = host;
    a.loss_multiplier_device = device;
    a.gradient_ready = ready;
    a.gradient_ready_user_data = ready_data;
    return sdk::StatusFromPluginError(model_.plugin(), model_.plugin()->model->Model_Backward(&a));
  }
  static constexpr float kMultiplierForRaw = 1536.75f;

  ReadyCounts NewCounts() const {
    ReadyCounts c;
    for (const MNT_Tensor& g : grads_) c.times.emplace_back(sdk::NumElements(g), 0);
    return c;
  }

  sdk::ModelClient& model() { return model_; }
  std::vector<MNT_Tensor>& params() { return params_; }
  std::vector<MNT_Tensor>& grads() { return grads_; }

 private:
  static void Check(const sdk::Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }

  std::unique_ptr<sdk::BackendInstance> backend_;
  sdk::BackendClient client_;
  sdk::ModelClient model_;
  std::vector<std::unique_ptr<sdk::DeviceBuffer>> buffers_;
  std::vector<MNT_Tensor> params_, grads_;
  MNT_Tensor inputs_{}, targets_{}, loss_{};
};

constexpr float kMultiplier = 1536.75f;  // scale 6147 / 4 micro-batches
const float kNaN = std::numeric_limits<float>::quiet_NaN();

bool SameBits(const Grads& a, const Grads& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
      return false;
  }
  return true;
}

bool AnyNonZero(const Grads& g) {
  for (const auto& v : g)
    for (float x : v)
      if (x != 0.0f) return true;
  return false;
}

Grads HostFloatGrads() {
  Harness h(cpu::CpuBackendPluginApi(), mlp::MlpPluginApi(), 7);
  h.Forward();
  EXPECT_TRUE(h.model().Backward(h.params(), h.grads(), kMultiplier, false).ok());
  return h.Download();
}

TEST(ModelSkewTest, A15ModelGetsTheHostFloatAndNoDeviceMultiplier) {
  Harness h(cpu::CpuBackendPluginApi(), MlpAs15(), 7);
  EXPECT_FALSE(h.model().TakesDeviceLossMultiplier());
  h.Forward();
  g_last_backward_struct_size = 0;
  g_last_backward_had_device_multiplier = true;
  const sdk::Status s = h.model().Backward(h.params(), h.grads(), kMultiplier, false);
  ASSERT_TRUE(s.ok()) << s.message();
  // The struct this host knows (at least the 1.5 one the model reads), with
  // the device multiplier absent.
  EXPECT_EQ(g_last_backward_struct_size, size_t{MNT_Model_Backward_Args_STRUCT_SIZE});
  EXPECT_FALSE(g_last_backward_had_device_multiplier);
  const Grads g = h.Download();
  EXPECT_TRUE(AnyNonZero(g));
  EXPECT_TRUE(SameBits(g, HostFloatGrads()));

  // A device multiplier it would never see is refused, not silently dropped.
  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  const sdk::Status refused = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  EXPECT_EQ(refused.code(), MNT_ERROR_FAILED_PRECONDITION);
  EXPECT_NE(refused.message().find("ABI 1.5"), std::string::npos) << refused.message();
}

TEST(ModelSkewTest, DeviceMultiplierGivesTheSameBitsAsTheHostFloat) {
  const Grads want = HostFloatGrads();
  ASSERT_TRUE(AnyNonZero(want));
  Harness h(cpu::CpuBackendPluginApi(), mlp::MlpPluginApi(), 7);
  EXPECT_TRUE(h.model().TakesDeviceLossMultiplier());
  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  h.Forward();
  // The host float is NaN: the model must not look at it.
  const sdk::Status s = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(SameBits(h.Download(), want));

  // A 1.6 model called by a 1.5 host (the shorter struct): the host float.
  h.Forward();
  ASSERT_TRUE(h.RawBackward(MNT_Model_Backward_Args_STRUCT_SIZE_1_5, kMultiplier, nullptr).ok());
  EXPECT_TRUE(SameBits(h.Download(), want));

  // Not F32 [1]: refused in one line.
  const MNT_Tensor two = h.Upload({1.0f, 2.0f}, {2});
  const sdk::Status bad = h.model().Backward(h.params(), h.grads(), 1.0f, &two, false);
  EXPECT_EQ(bad.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(bad.message().find("loss_multiplier_device"), std::string::npos) << bad.message();
}

TEST(ModelSkewTest, A16ModelOnA15BackendReadsTheMultiplierItself) {
  const Grads want = HostFloatGrads();
  Harness h(CpuAs15(), mlp::MlpPluginApi(), 7);
  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  h.Forward();
  g_cross_entropy_calls = 0;
  const sdk::Status s = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(g_cross_entropy_calls, 0);
  EXPECT_TRUE(SameBits(h.Download(), want));
}

TEST(ModelSkewTest, A19ModelThatDoesNotAdvertiseTheDeviceMultiplierGetsNone) {
  Harness h(cpu::CpuBackendPluginApi(), MlpAs19WithoutCapabilities(), 7);
  ASSERT_EQ(h.model().plugin()->abi_version.minor_version, MNT_ABI_MINOR);
  EXPECT_FALSE(h.model().TakesDeviceLossMultiplier()) << "its minor is newer than 1.6";
  h.Forward();
  g_last_backward_struct_size = 0;
  g_last_backward_had_device_multiplier = true;
  const sdk::Status s = h.model().Backward(h.params(), h.grads(), kMultiplier, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g_last_backward_struct_size, size_t{MNT_Model_Backward_Args_STRUCT_SIZE});
  EXPECT_FALSE(g_last_backward_had_device_multiplier);
  EXPECT_TRUE(SameBits(h.Download(), HostFloatGrads()));

  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  const sdk::Status refused = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  EXPECT_EQ(refused.code(), MNT_ERROR_FAILED_PRECONDITION);
  EXPECT_NE(refused.message().find("MODEL_DEVICE_LOSS_MULTIPLIER"), std::string::npos)
      << refused.message();
}

TEST(ModelSkewTest, A19BackendThatDoesNotAdvertiseTheGradMultiplierGetsTwoInputs) {
  const Grads want = HostFloatGrads();
  Harness h(CpuAs19WithoutCapabilities(), mlp::MlpPluginApi(), 7);
  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  h.Forward();
  g_cross_entropy_calls = 0;
  const sdk::Status s = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(g_cross_entropy_calls, 0);  // RunAs15 checked each has 2 inputs
  EXPECT_TRUE(SameBits(h.Download(), want));
}

TEST(ModelSkewTest, A111ModelHandsOverEveryGradientElementOnce) {
  const Grads want = HostFloatGrads();
  Harness h(cpu::CpuBackendPluginApi(), RecordingMlp(), 7);
  EXPECT_TRUE(h.model().HandsOverGradients());
  // No callback set: the 1.11 struct with NULL, the same bits.
  h.Forward();
  g_last_backward_struct_size = 0;
  sdk::Status s = h.model().Backward(h.params(), h.grads(), kMultiplier, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g_last_backward_struct_size, size_t{MNT_Model_Backward_Args_STRUCT_SIZE});
  EXPECT_TRUE(SameBits(h.Download(), want));
  // With one: every element reported once, the same bits.
  ReadyCounts counts = h.NewCounts();
  h.model().UseGradientReady(&ReadyCounts::Callback, &counts);
  h.Forward();
  s = h.model().Backward(h.params(), h.grads(), kMultiplier, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g_last_backward_struct_size, size_t{MNT_Model_Backward_Args_STRUCT_SIZE});
  EXPECT_GT(counts.calls, 0);
  EXPECT_TRUE(counts.EachOnce());
  EXPECT_TRUE(SameBits(h.Download(), want));
  // The device-multiplier Backward hands it over too.
  counts = h.NewCounts();
  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  h.Forward();
  s = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(counts.EachOnce());
  EXPECT_TRUE(SameBits(h.Download(), want));
}

TEST(ModelSkewTest, A110ModelIsNeverCalledBack) {
  const Grads want = HostFloatGrads();
  Harness h(cpu::CpuBackendPluginApi(), MlpAs110(), 7);
  EXPECT_FALSE(h.model().HandsOverGradients());
  EXPECT_TRUE(h.model().TakesDeviceLossMultiplier());
  ReadyCounts counts = h.NewCounts();
  h.model().UseGradientReady(&ReadyCounts::Callback, &counts);
  h.Forward();
  g_last_backward_struct_size = 0;
  g_last_backward_had_callback = true;
  sdk::Status s = h.model().Backward(h.params(), h.grads(), kMultiplier, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g_last_backward_struct_size, size_t{MNT_Model_Backward_Args_STRUCT_SIZE});
  EXPECT_FALSE(g_last_backward_had_callback);
  EXPECT_EQ(counts.calls, 0);
  EXPECT_TRUE(SameBits(h.Download(), want));
  const MNT_Tensor m = h.Upload({kMultiplier}, {1});
  h.Forward();
  g_last_backward_had_callback = true;
  s = h.model().Backward(h.params(), h.grads(), kNaN, &m, false);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g_last_backward_struct_size, size_t{MNT_Model_Backward_Args_STRUCT_SIZE});
  EXPECT_FALSE(g_last_backward_had_callback);
  EXPECT_EQ(counts.calls, 0);
  EXPECT_TRUE(SameBits(h.Download(), want));
}

TEST(ModelSkewTest, A111ModelCalledByA110HostNeverReadsTheCallback) {
  const Grads want = HostFloatGrads();
  Harness h(cpu::CpuBackendPluginApi(), mlp::MlpPluginApi(), 7);
  ReadyCounts counts = h.NewCounts();
  // The callback sits past the 1.10 struct: the model must not see it.
  h.Forward();
  sdk::Status s = h.RawBackward(MNT_Model_Backward_Args_STRUCT_SIZE_1_10,
                                Harness::kMultiplierForRaw, nullptr, &ReadyCounts::Callback,
                                &counts);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(counts.calls, 0);
  EXPECT_TRUE(SameBits(h.Download(), want));
  // The full struct: called back, every element once.
  h.Forward();
  s = h.RawBackward(MNT_Model_Backward_Args_STRUCT_SIZE, Harness::kMultiplierForRaw, nullptr,
                    &ReadyCounts::Callback, &counts);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(counts.EachOnce());
  EXPECT_TRUE(SameBits(h.Download(), want));
}


// ABI 1.12's declared data (MNT_ModelData_Extension). The MLP as a 1.11
// build of it is (minor 11, its chain the capabilities alone) declares
// nothing: the trainer leaves its data to Model_Create. The 1.12 MLP
// declares feature vectors and images: the trainer refuses tokens before
// creating it, naming what it takes.
TEST(ModelSkewTest, OnlyAModelThatDeclaresItsDataIsRefusedOtherDataBeforeCreate) {
  const MNT_Plugin_Api* mlp = mlp::MlpPluginApi();
  static MNT_Capabilities_Extension caps_1_11;
  static MNT_Plugin_Api mlp_1_11;
  caps_1_11 = *sdk::FindCapabilitiesExtension(mlp);
  caps_1_11.header.base.next = nullptr;
  mlp_1_11 = *mlp;
  mlp_1_11.abi_version.minor_version = 11;
  mlp_1_11.extension_start = &caps_1_11.header.base;
  ASSERT_TRUE(sdk::CheckExtensionChain(&mlp_1_11).ok());
  EXPECT_TRUE(sdk::DeclaredDataKinds(&mlp_1_11).empty());
  EXPECT_EQ(sdk::DeclaredDataKinds(mlp),
            (std::vector<MNT_DataKind>{MNT_DATA_KIND_FEATURES, MNT_DATA_KIND_IMAGES}));

  trainer::TrainConfig c = trainer::DefaultTrainConfig();
  c.set_model("mlp");
  c.mutable_data()->set_dataset("fortunes");
  const auto as = [](const MNT_Plugin_Api* plugin) {
    return [plugin](const std::string&) { return sdk::DeclaredDataKinds(plugin); };
  };
  EXPECT_TRUE(trainer::CheckModelTakesDataset(c, as(&mlp_1_11), {"mlp"}).ok());
  EXPECT_EQ(trainer::CheckModelTakesDataset(c, as(mlp), {"mlp"}).message(),
            "--model=mlp does not train on --dataset=fortunes: mlp takes labelled feature vectors "
            "or labelled images (--dataset=digits|idx)");
  c.mutable_data()->set_dataset("digits");
  EXPECT_TRUE(trainer::CheckModelTakesDataset(c, as(mlp), {"mlp"}).ok());
}

}  // namespace
}  // namespace mnt

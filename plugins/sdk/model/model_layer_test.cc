// The shared model pieces on the real CPU backend: the op facade's Linear in
// both weight layouts (forward and every gradient) against a float64 host
// reference, its support cache, the create-args checks (order, messages),
// the call checks, the arena's layout and the per-layer views.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/sdk/model/create_args.h"
#include "plugins/sdk/model/device_arena.h"
#include "plugins/sdk/model/model_io.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/model/views.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {
namespace {

using sdk::Status;

std::string Take(const MNT_Plugin_Api* plugin, MNT_Error* e) {
  if (e == nullptr) return "";
  std::string m = plugin->Error_Message(e);
  plugin->Error_Destroy(e);
  return m;
}

class ModelLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = cpu::CpuBackendPluginApi();
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    ASSERT_EQ(Take(plugin_, plugin_->backend->Backend_Create(&a)), "");
    client_ = sdk::BackendClient(plugin_, a.backend);
    const unsigned seed = std::random_device{}();
    std::printf("seed = %u\n", seed);
    rng_.seed(seed);
  }
  void TearDown() override {
    buffers_.clear();
    MNT_Backend_Destroy_Args a{};
    a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    a.backend = client_.backend();
    EXPECT_EQ(Take(plugin_, plugin_->backend->Backend_Destroy(&a)), "");
  }

  MNT_Model_Create_Args CreateArgs() const {
    MNT_Model_Create_Args a{};
    a.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
    a.backend_plugin = plugin_;
    a.backend = client_.backend();
    a.data_spec.struct_size = MNT_DataSpec_STRUCT_SIZE;
    a.precision = {MNT_ModelPrecision_STRUCT_SIZE, MNT_DTYPE_F32,
                   MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_COMPUTE_F32};
    a.max_batch_size = 4;
    return a;
  }

  // F32 device tensor with fresh N(0, 1) values; *host keeps them.
  MNT_Tensor Random(const std::vector<int64_t>& dims,
                    std::vector<double>* host) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    int64_t n = 1;
    for (int64_t x : dims) n *= x;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng_);
    host->assign(v.begin(), v.end());
    MNT_Tensor t = Alloc(dims);
    EXPECT_TRUE(client_.ToDevice(t.data, v.data(), v.size() * 4).ok());
    return t;
  }
  MNT_Tensor Alloc(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t x : dims) n *= x;
    buffers_.emplace_back();
    EXPECT_TRUE(
        client_.Allocate(n * 4, MNT_MEMORY_DATA, &buffers_.back()).ok());
    return View(buffers_.back().data(), MNT_DTYPE_F32, dims);
  }
  std::vector<double> Download(const MNT_Tensor& t) {
    std::vector<float> v(static_cast<size_t>(sdk::NumElements(t)));
    EXPECT_TRUE(client_.ToHost(v.data(), t.data, v.size() * 4).ok());
    return std::vector<double>(v.begin(), v.end());
  }
  Ops MakeOps(const std::vector<MNT_Op>& required) {
    Ops ops;
    EXPECT_TRUE(Ops::Create(client_, MNT_COMPUTE_F32, required, "test", "",
                            &ops)
                    .ok());
    return ops;
  }

  const MNT_Plugin_Api* plugin_ = nullptr;
  sdk::BackendClient client_;
  std::mt19937 rng_;
  std::vector<sdk::DeviceBuffer> buffers_;
};

// max |a - b| / max |b|; NaN never passes.
double MaxRelative(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    e = std::max(e, std::fabs(a[i] - b[i]));
    s = std::max(s, std::fabs(b[i]));
  }
  return e / std::max(s, 1e-30);
}

// y = x·Wᵀ + b ([out, in]) or x·W + b ([in, out]) and every gradient, in
// fp32 on the backend, against float64 on the host (fp32 tolerance).
TEST_F(ModelLayerTest, LinearAndItsGradientsMatchAFloat64Reference) {
  const Ops ops = MakeOps({MNT_OP_GEMM, MNT_OP_BIAS_GRAD});
  const int64_t B = 5, in = 7, out = 3;
  for (WeightLayout layout : {WeightLayout::kOutIn, WeightLayout::kInOut}) {
    const bool out_in = layout == WeightLayout::kOutIn;
    const std::vector<int64_t> wdims =
        out_in ? std::vector<int64_t>{out, in} : std::vector<int64_t>{in, out};
    std::vector<double> x, w, b, dy, dw0, db0;
    const MNT_Tensor tx = Random({B, in}, &x), tw = Random(wdims, &w),
                     tb = Random({out}, &b), tdy = Random({B, out}, &dy);
    // Accumulating into existing gradients adds to them.
    const MNT_Tensor tdw = Random(wdims, &dw0), tdb = Random({out}, &db0);
    // y and dx are overwritten: start them as garbage.
    std::vector<double> unused;
    const MNT_Tensor ty = Random({B, out}, &unused),
                     tdx = Random({B, in}, &unused);
    ASSERT_TRUE(ops.Linear(tx, tw, tb, ty, layout).ok());
    ASSERT_TRUE(
        ops.LinearBackward(tx, tw, tdy, tdw, tdb, tdx, true, layout).ok());

    auto W = [&](int64_t i, int64_t o) {
      return out_in ? w[o * in + i] : w[i * out + o];
    };
    std::vector<double> y(B * out), dx(B * in, 0.0), dw = dw0, db = db0;
    for (int64_t r = 0; r < B; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        double s = b[o];
        for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * W(i, o);
        y[r * out + o] = s;
        db[o] += dy[r * out + o];
        for (int64_t i = 0; i < in; ++i) {
          dx[r * in + i] += dy[r * out + o] * W(i, o);
          dw[out_in ? o * in + i : i * out + o] +=
              dy[r * out + o] * x[r * in + i];
        }
      }
    }
    const char* name = out_in ? "[out, in]" : "[in, out]";
    EXPECT_LT(MaxRelative(Download(ty), y), 1e-5) << name << " y";
    EXPECT_LT(MaxRelative(Download(tdx), dx), 1e-5) << name << " dx";
    EXPECT_LT(MaxRelative(Download(tdw), dw), 1e-5) << name << " dW";
    EXPECT_LT(MaxRelative(Download(tdb), db), 1e-5) << name << " db";
  }
}

TEST_F(ModelLayerTest, SupportIsWhatCreateAsked) {
  const Ops ops = MakeOps({MNT_OP_GEMM, MNT_OP_ATTENTION_FORWARD});
  EXPECT_TRUE(ops.Supports(MNT_OP_GEMM));
  EXPECT_TRUE(ops.Supports(MNT_OP_ATTENTION_FORWARD));
  EXPECT_FALSE(ops.Supports(MNT_OP_CAST));  // not asked
  EXPECT_FALSE(ops.Supports(static_cast<MNT_Op>(1000)));
}

TEST_F(ModelLayerTest, CopyRefusesDifferentSizes) {
  const Ops ops = MakeOps({});
  std::vector<double> host;
  const MNT_Tensor a = Random({4}, &host), b = Alloc({4}), c = Alloc({3});
  ASSERT_TRUE(ops.Copy(a, b).ok());
  EXPECT_EQ(Download(b), host);
  const Status s = ops.Copy(a, c);
  EXPECT_EQ(s.code(), MNT_ERROR_INTERNAL);
  EXPECT_NE(s.message().find("f32[4] into f32[3]"), std::string::npos)
      << s.message();
}

TEST_F(ModelLayerTest, CreateArgsAreCheckedInOrderWithOneLineMessages) {
  const ModelRequirements req{"toy", {MNT_OP_GEMM}, " (ABI 1.0)"};
  bool data_checked = false;
  auto check_data = [&](const MNT_DataSpec&) {
    data_checked = true;
    return Status::Ok();
  };
  auto error = [&](const MNT_Model_Create_Args& a) {
    data_checked = false;
    ModelSetup setup;
    return CheckCreateArgs(req, a, check_data, &setup).message();
  };

  MNT_Model_Create_Args a = CreateArgs();
  ModelSetup setup;
  ASSERT_TRUE(CheckCreateArgs(req, a, check_data, &setup).ok());
  EXPECT_TRUE(data_checked);
  EXPECT_EQ(setup.max_batch, 4);
  EXPECT_TRUE(setup.ops.Supports(MNT_OP_GEMM));

  a = CreateArgs();
  a.backend = nullptr;
  a.max_batch_size = 0;  // later checks do not run
  EXPECT_EQ(error(a),
            "toy: backend_plugin (with a backend API) and backend are "
            "required");
  EXPECT_FALSE(data_checked);

  a = CreateArgs();
  a.data_spec.struct_size = 8;
  EXPECT_EQ(error(a), "toy: data_spec.struct_size 8 is smaller than " +
                          std::to_string(MNT_DataSpec_STRUCT_SIZE));
  EXPECT_FALSE(data_checked);

  a = CreateArgs();
  a.precision.activation_dtype = MNT_DTYPE_I32;
  EXPECT_EQ(error(a),
            "toy: precision.activation_dtype is i32, expected f32, f16 or "
            "bf16");
  EXPECT_TRUE(data_checked);  // the data comes before the precision

  a = CreateArgs();
  a.precision.matmul_compute = static_cast<MNT_ComputeMode>(9);
  EXPECT_EQ(error(a),
            "toy: precision.matmul_compute is 9, not a valid compute mode");

  a = CreateArgs();
  a.max_batch_size = 0;
  EXPECT_EQ(error(a), "toy: max_batch_size is 0, expected 1 to 2147483648");
  a.max_batch_size = int64_t{1} << 62;  // batch x width would overflow int64
  EXPECT_EQ(error(a), "toy: max_batch_size is 4611686018427387904, expected 1 to 2147483648");

  // The model's own data check reports for itself.
  ModelSetup unused;
  const Status s = CheckCreateArgs(
      req, CreateArgs(),
      [](const MNT_DataSpec&) { return sdk::InvalidArgument("toy: no data"); },
      &unused);
  EXPECT_EQ(s.message(), "toy: no data");
}

TEST_F(ModelLayerTest, AnAbsurdActivationPlanIsRefusedBeforeAllocating) {
  ModelSetup setup;
  MNT_Model_Create_Args a = CreateArgs();
  ASSERT_TRUE(CheckCreateArgs({"toy", {}, ""}, a,
                              [](const MNT_DataSpec&) { return Status::Ok(); },
                              &setup)
                  .ok());
  DeviceArena arena;
  arena.Reserve(MNT_DTYPE_F32, 1e17);  // 4e17 bytes: wraps nothing
  const Status s = AllocateActivations(setup, &arena);
  EXPECT_EQ(s.code(), MNT_ERROR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.message(),
            "toy: activations for max_batch_size 4 would take 4e+17 bytes");

  DeviceArena small;
  const DeviceArena::Slot slot = small.Reserve(MNT_DTYPE_BF16, 10);
  ASSERT_TRUE(AllocateActivations(setup, &small).ok());
  int64_t current = 0;
  ASSERT_TRUE(client_.GetStats(MNT_MEMORY_ACTIVATIONS, &current, nullptr).ok());
  EXPECT_EQ(current, 256);
  EXPECT_EQ(small.View(slot, {2, 5}).dtype, MNT_DTYPE_BF16);
}

TEST(DeviceArenaTest, SlotsAreAlignedTypedAndSummedExactly) {
  DeviceArena arena;
  const DeviceArena::Slot a = arena.Reserve(MNT_DTYPE_F32, 3);    // 12 bytes
  const DeviceArena::Slot b = arena.Reserve(MNT_DTYPE_BF16, 200);  // 400
  const DeviceArena::Slot c = arena.Reserve(MNT_DTYPE_I32, 64);    // 256
  EXPECT_EQ(arena.planned_bytes(), 256u + 512u + 256u);
  EXPECT_EQ(arena.requested_bytes(), 12.0 + 400.0 + 256.0);
  EXPECT_EQ(a.dtype, MNT_DTYPE_F32);
  EXPECT_EQ(b.dtype, MNT_DTYPE_BF16);
  EXPECT_EQ(c.dtype, MNT_DTYPE_I32);
}

TEST(ViewsTest, LayerSlicesTheLeadingDimension) {
  alignas(8) char storage[3 * 4 * 5 * 2];
  const MNT_Tensor stacked = View(storage, MNT_DTYPE_F16, {3, 4, 5});
  const MNT_Tensor l2 = Layer(stacked, 2);
  EXPECT_EQ(l2.data, storage + 2 * 4 * 5 * 2);
  EXPECT_EQ(sdk::Describe(l2), "f16[4,5]");
  const MNT_Tensor flat = Reshape(stacked, {60});
  EXPECT_EQ(flat.data, static_cast<void*>(storage));
  EXPECT_EQ(sdk::Describe(flat), "f16[60]");
}

// Forward/Backward argument checks: batch range, the minimum training batch,
// class-id targets as [B] or [B, 1], sequences as [B, T], Backward before a
// training Forward, a non-finite loss multiplier.
TEST(ModelIoTest, ChecksCallsAgainstTheModelsShapes) {
  int32_t fake = 0;
  const std::vector<ParamSpec> specs = {
      {"w", {2, 3}, MNT_PARAM_INIT_NORMAL, 1.0f, true}};
  ExampleShape images;
  images.noun = "images";
  images.input_dims = {3};
  images.min_training_batch = 2;
  images.min_training_batch_reason = "batch norm statistics";
  const ModelIo io("toy", specs, images, MNT_DTYPE_BF16, MNT_DTYPE_F32, 4);

  const MNT_Tensor w = View(&fake, MNT_DTYPE_BF16, {2, 3});
  const MNT_Tensor loss = View(&fake, MNT_DTYPE_F32, {1});
  auto forward = [&](const MNT_Tensor& in, const MNT_Tensor& tg,
                     bool training) {
    ForwardCall c;
    c.params = &w;
    c.num_params = 1;
    c.inputs = &in;
    c.targets = &tg;
    c.training = training;
    c.loss_out = &loss;
    int64_t batch = -1;
    const Status s = io.CheckForward(c, &batch);
    return s.ok() ? "batch " + std::to_string(batch) : s.message();
  };
  const MNT_Tensor in3 = View(&fake, MNT_DTYPE_F32, {3, 3});
  EXPECT_EQ(forward(in3, View(&fake, MNT_DTYPE_I32, {3}), true), "batch 3");
  EXPECT_EQ(forward(in3, View(&fake, MNT_DTYPE_I32, {3, 1}), true), "batch 3");
  EXPECT_EQ(forward(in3, View(&fake, MNT_DTYPE_I32, {3, 2}), true),
            "toy Forward: targets is i32[3,2], expected i32[3,1]");
  EXPECT_EQ(forward(View(&fake, MNT_DTYPE_F32, {5, 3}),
                    View(&fake, MNT_DTYPE_I32, {5}), false),
            "toy Forward: batch of 5 images (inputs f32[5,3]), expected 1..4");
  const MNT_Tensor in1 = View(&fake, MNT_DTYPE_F32, {1, 3});
  const MNT_Tensor tg1 = View(&fake, MNT_DTYPE_I32, {1});
  EXPECT_EQ(forward(in1, tg1, false), "batch 1");
  EXPECT_EQ(forward(in1, tg1, true),
            "toy Forward: training needs a batch of at least 2 images (batch "
            "norm statistics)");

  ExampleShape tokens;
  tokens.noun = "sequences";
  tokens.input_dtype = MNT_DTYPE_I32;
  tokens.input_dims = {6};
  tokens.target_dims = {6};
  const ModelIo lm("lm", specs, tokens, MNT_DTYPE_BF16, MNT_DTYPE_F32, 4);
  ForwardCall c;
  c.params = &w;
  c.num_params = 1;
  const MNT_Tensor ids = View(&fake, MNT_DTYPE_I32, {2, 6});
  const MNT_Tensor short_targets = View(&fake, MNT_DTYPE_I32, {2});
  c.inputs = &ids;
  c.targets = &short_targets;
  c.loss_out = &loss;
  int64_t batch = 0;
  EXPECT_EQ(lm.CheckForward(c, &batch).message(),
            "lm Forward: targets is i32[2], expected i32[2,6]");

  const MNT_Tensor g = View(&fake, MNT_DTYPE_F32, {2, 3});
  BackwardCall b;
  b.params = &w;
  b.num_params = 1;
  b.grads = &g;
  b.num_grads = 1;
  EXPECT_EQ(io.CheckBackward(b, 0).code(), MNT_ERROR_FAILED_PRECONDITION);
  EXPECT_TRUE(io.CheckBackward(b, 3).ok());
  b.grads = &w;  // bf16: the gradient dtype is f32
  EXPECT_EQ(io.CheckBackward(b, 3).message(),
            "toy Backward: grads[0] w is bf16[2,3], expected f32[2,3]");
  b.grads = &g;
  b.loss_multiplier = INFINITY;
  EXPECT_EQ(io.CheckBackward(b, 3).message(),
            "toy Backward: loss_multiplier is inf, expected a finite number");
}

}  // namespace
}  // namespace mnt::models

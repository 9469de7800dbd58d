// The CNN's analytic gradients (Model_Backward on the CPU backend, fp32)
// against central finite differences of its own training-mode loss (batch
// statistics), for every parameter element of a depth-1 ResNet with a
// residual block, on [B, C, H, W] input; and the one-line refusals.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "models/cnn/cnn_model.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cnn {
namespace {

std::string Take(const MNT_Plugin_Api* plugin, MNT_Error* e) {
  if (e == nullptr) return "";
  std::string m = plugin->Error_Message(e);
  plugin->Error_Destroy(e);
  return m;
}

class CnnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bp_ = cpu::CpuBackendPluginApi();
    MNT_Backend_Create_Args ba{};
    ba.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    ASSERT_EQ(Take(bp_, bp_->backend->Backend_Create(&ba)), "");
    backend_ = ba.backend;
    client_ = sdk::BackendClient(bp_, backend_);
  }
  void TearDown() override {
    if (model_ != nullptr) {
      MNT_Model_Destroy_Args md{};
      md.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
      md.model = model_;
      EXPECT_EQ(Take(CnnPluginApi(), api()->Model_Destroy(&md)), "");
    }
    buffers_.clear();
    MNT_Backend_Destroy_Args bd{};
    bd.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    bd.backend = backend_;
    EXPECT_EQ(Take(bp_, bp_->backend->Backend_Destroy(&bd)), "");
  }
  const MNT_Model_Api* api() const { return CnnPluginApi()->model; }

  MNT_Model_Create_Args CreateArgs(const char* options,
                                   std::vector<int64_t> dims, int64_t batch) {
    MNT_Model_Create_Args ca{};
    ca.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
    ca.options = options;
    ca.backend_plugin = bp_;
    ca.backend = backend_;
    ca.data_spec.struct_size = MNT_DataSpec_STRUCT_SIZE;
    ca.data_spec.input_dtype = MNT_DTYPE_F32;
    ca.data_spec.input_rank = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      ca.data_spec.input_dims[i] = dims[i];
    ca.data_spec.num_classes = 3;
    ca.data_spec.targets_per_example = 1;
    ca.precision.struct_size = MNT_ModelPrecision_STRUCT_SIZE;
    ca.precision.weight_dtype = ca.precision.gradient_dtype =
        ca.precision.activation_dtype = MNT_DTYPE_F32;
    ca.precision.matmul_compute = MNT_COMPUTE_F32;
    ca.max_batch_size = batch;
    return ca;
  }

  MNT_Tensor Device(const void* host, size_t bytes, MNT_DType dtype,
                    std::vector<int64_t> dims, MNT_MemoryCategory cat) {
    buffers_.emplace_back();
    EXPECT_TRUE(client_.Allocate(bytes, cat, &buffers_.back()).ok());
    if (host) {
      EXPECT_TRUE(client_.ToDevice(buffers_.back().data(), host, bytes).ok());
    }
    return sdk::MakeTensor(buffers_.back().data(), dtype,
                           static_cast<int32_t>(dims.size()), dims.data());
  }

  const MNT_Plugin_Api* bp_ = nullptr;
  MNT_Backend* backend_ = nullptr;
  sdk::BackendClient client_;
  std::vector<sdk::DeviceBuffer> buffers_;
  MNT_Model* model_ = nullptr;
};

TEST_F(CnnTest, GradientsMatchCentralDifferencesOfTheLoss) {
  const int64_t batch = 4, channels = 2, side = 3;
  MNT_Model_Create_Args ca =
      CreateArgs("depth=1,width=3", {channels, side, side}, batch);
  ASSERT_EQ(Take(CnnPluginApi(), api()->Model_Create(&ca)), "");
  model_ = ca.model;

  const unsigned seed = std::random_device{}();
  std::printf("seed = %u\n", seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);

  MNT_Model_GetParamCount_Args pc{};
  pc.struct_size = MNT_Model_GetParamCount_Args_STRUCT_SIZE;
  pc.model = model_;
  ASSERT_EQ(Take(CnnPluginApi(), api()->Model_GetParamCount(&pc)), "");
  ASSERT_EQ(pc.num_params, 3 * 3 + 2);
  std::vector<std::vector<float>> host(pc.num_params);
  std::vector<MNT_Tensor> w_t, g_t;
  int64_t total = 0;
  std::vector<bool> is_gamma(pc.num_params);
  for (int64_t i = 0; i < pc.num_params; ++i) {
    MNT_Model_GetParamSpec_Args ps{};
    ps.struct_size = MNT_Model_GetParamSpec_Args_STRUCT_SIZE;
    ps.model = model_;
    ps.index = i;
    ASSERT_EQ(Take(CnnPluginApi(), api()->Model_GetParamSpec(&ps)), "");
    int64_t n = 1;
    for (int d = 0; d < ps.rank; ++d) n *= ps.dims[d];
    total += n;
    host[i].resize(n);
    is_gamma[i] = ps.init == MNT_PARAM_INIT_ONES;
    // Gammas near 1, everything else random (biases too).
    for (float& v : host[i]) {
      v = ps.init == MNT_PARAM_INIT_ONES ? 1.0f + 0.3f * normal(rng)
                                         : 0.5f * normal(rng);
    }
    std::vector<int64_t> dims(ps.dims, ps.dims + ps.rank);
    w_t.push_back(
        Device(host[i].data(), n * 4, MNT_DTYPE_F32, dims, MNT_MEMORY_WEIGHTS));
    g_t.push_back(
        Device(nullptr, n * 4, MNT_DTYPE_F32, dims, MNT_MEMORY_GRADIENTS));
  }
  std::vector<float> x(batch * channels * side * side);
  for (float& v : x) v = normal(rng);
  std::vector<int32_t> t(batch);
  for (int32_t& v : t) v = static_cast<int32_t>(rng() % 3);
  const MNT_Tensor x_t = Device(x.data(), x.size() * 4, MNT_DTYPE_F32,
                                {batch, channels, side, side}, MNT_MEMORY_DATA);
  const MNT_Tensor t_t =
      Device(t.data(), t.size() * 4, MNT_DTYPE_I32, {batch}, MNT_MEMORY_DATA);
  const MNT_Tensor loss_t =
      Device(nullptr, 4, MNT_DTYPE_F32, {1}, MNT_MEMORY_DATA);

  auto forward = [&]() {
    MNT_Model_Forward_Args f{};
    f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
    f.model = model_;
    f.params = w_t.data();
    f.num_params = w_t.size();
    f.inputs = &x_t;
    f.targets = &t_t;
    f.training = 1;  // the loss Backward differentiates: batch statistics
    f.loss_out = &loss_t;
    EXPECT_EQ(Take(CnnPluginApi(), api()->Model_Forward(&f)), "");
    float loss = NAN;
    EXPECT_TRUE(client_.ToHost(&loss, loss_t.data, 4).ok());
    return static_cast<double>(loss);
  };

  // A fresh random point: parameters, inputs and targets.
  auto randomize = [&]() {
    for (size_t i = 0; i < host.size(); ++i) {
      for (float& v : host[i]) {
        v = is_gamma[i] ? 1.0f + 0.3f * normal(rng) : 0.5f * normal(rng);
      }
      EXPECT_TRUE(
          client_.ToDevice(w_t[i].data, host[i].data(), host[i].size() * 4)
              .ok());
    }
    for (float& v : x) v = normal(rng);
    for (int32_t& v : t) v = static_cast<int32_t>(rng() % 3);
    EXPECT_TRUE(client_.ToDevice(x_t.data, x.data(), x.size() * 4).ok());
    EXPECT_TRUE(client_.ToDevice(t_t.data, t.data(), t.size() * 4).ok());
  };

  MNT_Model_Backward_Args b{};
  b.struct_size = MNT_Model_Backward_Args_STRUCT_SIZE;
  b.model = model_;
  b.params = w_t.data();
  b.num_params = w_t.size();
  b.grads = g_t.data();
  b.num_grads = g_t.size();
  b.loss_multiplier = 1.0f;

  auto central_difference = [&](size_t i, size_t j, float step) {
    std::vector<float> p = host[i];
    p[j] = host[i][j] + step;
    EXPECT_TRUE(client_.ToDevice(w_t[i].data, p.data(), p.size() * 4).ok());
    const double plus = forward();
    const double hi = p[j];
    p[j] = host[i][j] - step;
    EXPECT_TRUE(client_.ToDevice(w_t[i].data, p.data(), p.size() * 4).ok());
    const double minus = forward();
    return (plus - minus) / (hi - double(p[j]));
  };
  // eps 2e-3: small enough that few ReLU inputs cross zero, large enough
  // that the fp32 loss's rounding (~3e-7) adds under 1e-4. Where the
  // estimates at eps and eps/2 disagree the step crossed a kink and the
  // element is not judged (counted and bounded).
  //
  // ReLU kinks are where finite differences stop meaning anything, and with
  // batch norm one weight moves every unit: rarely, a random point sits so
  // near several kinks that an element cannot be judged by any step. Such a
  // point is replaced by a fresh one (at most twice); a wrong gradient fails
  // at every point.
  const float eps = 2e-3f;
  int checked = 0, kinks = 0;
  std::vector<std::string> mismatches;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) randomize();
    checked = 0;
    kinks = 0;
    mismatches.clear();
    ASSERT_TRUE(std::isfinite(forward()));
    ASSERT_EQ(Take(CnnPluginApi(), api()->Model_Backward(&b)), "");
    for (size_t i = 0; i < host.size(); ++i) {
      std::vector<float> g(host[i].size());
      ASSERT_TRUE(client_.ToHost(g.data(), g_t[i].data, g.size() * 4).ok());
      for (size_t j = 0; j < host[i].size(); ++j) {
        const double fd = central_difference(i, j, eps);
        const double fd_half = central_difference(i, j, eps / 2);
        const double tol = 2e-3 + 2e-2 * std::fabs(fd);
        ASSERT_TRUE(std::isfinite(g[j]) && std::isfinite(fd));
        if (std::fabs(fd - fd_half) > tol / 4) {
          ++kinks;
          continue;
        }
        if (std::fabs(g[j] - fd) > tol) {
          // A kink right next to the point fools both central differences
          // alike; the one-sided slopes then disagree, and backward must match
          // one of them (the side its subgradient picks).
          const float q = eps / 4;
          std::vector<float> p = host[i];
          auto loss_at = [&](float delta) {
            p[j] = host[i][j] + delta;
            EXPECT_TRUE(
                client_.ToDevice(w_t[i].data, p.data(), p.size() * 4).ok());
            return forward();
          };
          const double l0 = loss_at(0), lq = loss_at(q), lmq = loss_at(-q);
          const double up = (lq - l0) / q, down = (l0 - lmq) / q;
          if (std::fabs(up - down) > tol / 2 &&
              (std::fabs(g[j] - up) <= tol || std::fabs(g[j] - down) <= tol)) {
            ++kinks;
            continue;
          }
        }
        if (std::fabs(g[j] - fd) > tol) {
          char line[160];
          std::snprintf(
              line, sizeof(line),
              "param %zu element %zu: backward %.6g, finite difference %.6g", i,
              j, double(g[j]), fd);
          mismatches.push_back(line);
        }
        ++checked;
      }
      ASSERT_TRUE(
          client_.ToDevice(w_t[i].data, host[i].data(), host[i].size() * 4)
              .ok());
    }
    std::printf(
        "attempt %d: %d elements checked, %d skipped at a kink, %zu "
        "mismatches\n",
        attempt, checked, kinks, mismatches.size());
    EXPECT_EQ(checked + kinks, total);
    // A ReLU input near zero upstream of many weights can bench a quarter of
    // them at once (seen: 70 of 246 once in 100 runs); half must stay judged.
    if (mismatches.empty() && kinks <= total / 2) break;
  }
  EXPECT_LE(kinks, total / 2);
  for (const std::string& m : mismatches) ADD_FAILURE() << m;
  ASSERT_TRUE(mismatches.empty());

  // accumulate=1 adds the same gradient again.
  std::vector<float> once(host[0].size()), twice(host[0].size());
  ASSERT_TRUE(client_.ToHost(once.data(), g_t[0].data, once.size() * 4).ok());
  forward();
  ASSERT_EQ(Take(CnnPluginApi(), api()->Model_Backward(&b)), "");
  b.accumulate = 1;
  forward();
  ASSERT_EQ(Take(CnnPluginApi(), api()->Model_Backward(&b)), "");
  ASSERT_TRUE(client_.ToHost(twice.data(), g_t[0].data, twice.size() * 4).ok());
  for (size_t j = 0; j < once.size(); ++j) {
    EXPECT_NEAR(twice[j], 2 * once[j], 1e-5 * (1 + std::fabs(once[j]))) << j;
  }
}

TEST_F(CnnTest, RefusalsAreOneLine) {
  MNT_Model_Create_Args ca = CreateArgs("depth=1", {64}, 4);
  EXPECT_EQ(Take(CnnPluginApi(), api()->Model_Create(&ca)),
            "cnn: input_rank is 1; the CNN takes images [H, "
            "W] or [C, H, W]");
  ca = CreateArgs("width=0", {8, 8}, 4);
  EXPECT_EQ(Take(CnnPluginApi(), api()->Model_Create(&ca)),
            "cnn options: width is 0, expected 1..1024");
}

// [B, H, W] input (the digits) is one channel; eval mode uses the running
// statistics and accepts a batch of one.
TEST_F(CnnTest, TwoDimensionalImagesAndEvalBatchOfOne) {
  MNT_Model_Create_Args ca = CreateArgs("depth=1,width=4", {5, 6}, 3);
  ASSERT_EQ(Take(CnnPluginApi(), api()->Model_Create(&ca)), "");
  model_ = ca.model;
  MNT_Model_GetParamSpec_Args ps{};
  ps.struct_size = MNT_Model_GetParamSpec_Args_STRUCT_SIZE;
  ps.model = model_;
  ps.index = 0;
  ASSERT_EQ(Take(CnnPluginApi(), api()->Model_GetParamSpec(&ps)), "");
  EXPECT_STREQ(ps.name, "stem.conv.weight");
  EXPECT_EQ(ps.dims[1], 1);
  std::vector<MNT_Tensor> w_t;
  for (int64_t i = 0; i < 3 * 3 + 2; ++i) {
    ps.index = i;
    ASSERT_EQ(Take(CnnPluginApi(), api()->Model_GetParamSpec(&ps)), "");
    int64_t n = 1;
    for (int d = 0; d < ps.rank; ++d) n *= ps.dims[d];
    std::vector<float> v(n, 0.1f);
    w_t.push_back(Device(v.data(), n * 4, MNT_DTYPE_F32,
                         std::vector<int64_t>(ps.dims, ps.dims + ps.rank),
                         MNT_MEMORY_WEIGHTS));
  }
  std::vector<float> x(5 * 6, 0.5f);
  const int32_t target = 2;
  const MNT_Tensor x_t =
      Device(x.data(), x.size() * 4, MNT_DTYPE_F32, {1, 5, 6}, MNT_MEMORY_DATA);
  const MNT_Tensor t_t =
      Device(&target, 4, MNT_DTYPE_I32, {1}, MNT_MEMORY_DATA);
  const MNT_Tensor loss_t =
      Device(nullptr, 4, MNT_DTYPE_F32, {1}, MNT_MEMORY_DATA);
  MNT_Model_Forward_Args f{};
  f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
  f.model = model_;
  f.params = w_t.data();
  f.num_params = w_t.size();
  f.inputs = &x_t;
  f.targets = &t_t;
  f.loss_out = &loss_t;
  f.training = 0;
  EXPECT_EQ(Take(CnnPluginApi(), api()->Model_Forward(&f)), "");
  float loss = NAN;
  ASSERT_TRUE(client_.ToHost(&loss, loss_t.data, 4).ok());
  // All-equal head weights: every logit is equal, loss = log(3).
  EXPECT_NEAR(loss, std::log(3.0), 1e-5);
  f.training = 1;
  EXPECT_EQ(Take(CnnPluginApi(), api()->Model_Forward(&f)),
            "cnn Forward: training needs a batch of at "
            "least 2 images (batch norm statistics)");
}

}  // namespace
}  // namespace mnt::cnn

// The MLP's analytic gradients (Model_Backward on the CPU backend, fp32)
// against central finite differences of its own forward loss. Independent of
// the float64 reference in mlp_model_test: this checks backward against
// forward, whatever either is.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "models/mlp/mlp_model.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::mlp {
namespace {

std::string Take(const MNT_Plugin_Api* plugin, MNT_Error* e) {
  if (e == nullptr) return "";
  std::string m = plugin->Error_Message(e);
  plugin->Error_Destroy(e);
  return m;
}

class FiniteDifferenceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FiniteDifferenceTest, GradientsMatchCentralDifferencesOfTheLoss) {
  const MNT_Plugin_Api* bp = cpu::CpuBackendPluginApi();
  const MNT_Model_Api* m = MlpPluginApi()->model;
  MNT_Backend_Create_Args ba{};
  ba.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  ASSERT_EQ(Take(bp, bp->backend->Backend_Create(&ba)), "");
  sdk::BackendClient client(bp, ba.backend);

  const int64_t batch = 5, features = 6, classes = 4;
  MNT_Model_Create_Args ca{};
  ca.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
  const std::string options =
      std::string("hidden=7:5,activation=") + GetParam();
  ca.options = options.c_str();
  ca.backend_plugin = bp;
  ca.backend = ba.backend;
  ca.data_spec.struct_size = MNT_DataSpec_STRUCT_SIZE;
  ca.data_spec.input_dtype = MNT_DTYPE_F32;
  ca.data_spec.input_rank = 1;
  ca.data_spec.input_dims[0] = features;
  ca.data_spec.num_classes = classes;
  ca.data_spec.targets_per_example = 1;
  ca.precision.struct_size = MNT_ModelPrecision_STRUCT_SIZE;
  ca.precision.weight_dtype = ca.precision.gradient_dtype =
      ca.precision.activation_dtype = MNT_DTYPE_F32;
  ca.precision.matmul_compute = MNT_COMPUTE_F32;
  ca.max_batch_size = batch;
  ASSERT_EQ(Take(MlpPluginApi(), m->Model_Create(&ca)), "");

  const unsigned seed = std::random_device{}();
  std::printf("seed = %u\n", seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);

  MNT_Model_GetParamCount_Args pc{};
  pc.struct_size = MNT_Model_GetParamCount_Args_STRUCT_SIZE;
  pc.model = ca.model;
  ASSERT_EQ(Take(MlpPluginApi(), m->Model_GetParamCount(&pc)), "");
  std::vector<std::vector<float>> host(pc.num_params);
  std::vector<sdk::DeviceBuffer> weights(pc.num_params), grads(pc.num_params);
  std::vector<MNT_Tensor> w_t, g_t;
  for (int64_t i = 0; i < pc.num_params; ++i) {
    MNT_Model_GetParamSpec_Args ps{};
    ps.struct_size = MNT_Model_GetParamSpec_Args_STRUCT_SIZE;
    ps.model = ca.model;
    ps.index = i;
    ASSERT_EQ(Take(MlpPluginApi(), m->Model_GetParamSpec(&ps)), "");
    int64_t n = 1;
    for (int d = 0; d < ps.rank; ++d) n *= ps.dims[d];
    host[i].resize(n);
    // Random biases too, so their gradients are exercised away from zero.
    for (float& v : host[i]) v = 0.5f * normal(rng);
    ASSERT_TRUE(client.Allocate(n * 4, MNT_MEMORY_WEIGHTS, &weights[i]).ok());
    ASSERT_TRUE(client.Allocate(n * 4, MNT_MEMORY_GRADIENTS, &grads[i]).ok());
    ASSERT_TRUE(client.ToDevice(weights[i].data(), host[i].data(), n * 4).ok());
    w_t.push_back(
        sdk::MakeTensor(weights[i].data(), MNT_DTYPE_F32, ps.rank, ps.dims));
    g_t.push_back(
        sdk::MakeTensor(grads[i].data(), MNT_DTYPE_F32, ps.rank, ps.dims));
  }
  std::vector<float> x(batch * features);
  for (float& v : x) v = normal(rng);
  std::vector<int32_t> t(batch);
  for (int32_t& v : t) v = static_cast<int32_t>(rng() % classes);
  sdk::DeviceBuffer x_buf, t_buf, loss_buf;
  ASSERT_TRUE(client.Allocate(x.size() * 4, MNT_MEMORY_DATA, &x_buf).ok());
  ASSERT_TRUE(client.Allocate(t.size() * 4, MNT_MEMORY_DATA, &t_buf).ok());
  ASSERT_TRUE(client.Allocate(4, MNT_MEMORY_DATA, &loss_buf).ok());
  ASSERT_TRUE(client.ToDevice(x_buf.data(), x.data(), x.size() * 4).ok());
  ASSERT_TRUE(client.ToDevice(t_buf.data(), t.data(), t.size() * 4).ok());
  const MNT_Tensor x_t =
      sdk::MakeTensor(x_buf.data(), MNT_DTYPE_F32, {batch, features});
  const MNT_Tensor t_t =
      sdk::MakeTensor(t_buf.data(), MNT_DTYPE_I32, {batch, 1});
  const MNT_Tensor loss_t =
      sdk::MakeTensor(loss_buf.data(), MNT_DTYPE_F32, {1});

  auto forward = [&](int training) {
    MNT_Model_Forward_Args f{};
    f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
    f.model = ca.model;
    f.params = w_t.data();
    f.num_params = w_t.size();
    f.inputs = &x_t;
    f.targets = &t_t;
    f.training = training;
    f.loss_out = &loss_t;
    EXPECT_EQ(Take(MlpPluginApi(), m->Model_Forward(&f)), "");
    float loss = NAN;
    EXPECT_TRUE(client.ToHost(&loss, loss_buf.data(), 4).ok());
    return static_cast<double>(loss);
  };

  // A fresh random point: parameters, inputs and targets.
  auto randomize = [&]() {
    for (size_t i = 0; i < host.size(); ++i) {
      for (float& v : host[i]) v = 0.5f * normal(rng);
      EXPECT_TRUE(
          client.ToDevice(weights[i].data(), host[i].data(), host[i].size() * 4)
              .ok());
    }
    for (float& v : x) v = normal(rng);
    for (int32_t& v : t) v = static_cast<int32_t>(rng() % classes);
    EXPECT_TRUE(client.ToDevice(x_buf.data(), x.data(), x.size() * 4).ok());
    EXPECT_TRUE(client.ToDevice(t_buf.data(), t.data(), t.size() * 4).ok());
  };

  MNT_Model_Backward_Args b{};
  b.struct_size = MNT_Model_Backward_Args_STRUCT_SIZE;
  b.model = ca.model;
  b.params = w_t.data();
  b.num_params = w_t.size();
  b.grads = g_t.data();
  b.num_grads = g_t.size();
  b.loss_multiplier = 1.0f;

  // eps 1e-2: truncation error ~eps^2 * f''' stays below 1e-4, and the fp32
  // loss's rounding (~1e-7) divided by 2*eps stays below 1e-5. A central
  // difference is only valid where the loss is smooth: when the estimates at
  // eps and eps/2 disagree, the step crossed a ReLU kink and the element is
  // not judged (counted, and bounded below).
  auto central_difference = [&](size_t i, size_t j, float step) {
    std::vector<float> p = host[i];
    p[j] = host[i][j] + step;
    EXPECT_TRUE(
        client.ToDevice(weights[i].data(), p.data(), p.size() * 4).ok());
    const double plus = forward(0);
    const double hi = p[j];
    p[j] = host[i][j] - step;
    EXPECT_TRUE(
        client.ToDevice(weights[i].data(), p.data(), p.size() * 4).ok());
    const double minus = forward(0);
    return (plus - minus) / (hi - double(p[j]));  // the step as rounded in fp32
  };
  // With ReLU, a random point can rarely sit so near several kinks that an
  // element cannot be judged by any step; such a point is replaced by a fresh
  // one (at most twice). A wrong gradient fails at every point.
  const float eps = 1e-2f;
  int checked = 0, kinks = 0;
  std::vector<std::string> mismatches;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) randomize();
    checked = 0;
    kinks = 0;
    mismatches.clear();
    ASSERT_TRUE(std::isfinite(forward(1)));
    ASSERT_EQ(Take(MlpPluginApi(), m->Model_Backward(&b)), "");
    for (size_t i = 0; i < host.size(); ++i) {
      std::vector<float> g(host[i].size());
      ASSERT_TRUE(client.ToHost(g.data(), grads[i].data(), g.size() * 4).ok());
      for (size_t j = 0; j < host[i].size(); ++j) {
        const double fd = central_difference(i, j, eps);
        const double fd_half = central_difference(i, j, eps / 2);
        const double tol = 2e-3 + 2e-2 * std::fabs(fd);
        ASSERT_TRUE(std::isfinite(g[j]) && std::isfinite(fd));
        // Rounding noise in either estimate is ~1e-5, far below tol / 8.
        if (std::fabs(fd - fd_half) > tol / 8) {
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
                client.ToDevice(weights[i].data(), p.data(), p.size() * 4)
                    .ok());
            return forward(0);
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
          client.ToDevice(weights[i].data(), host[i].data(), host[i].size() * 4)
              .ok());
    }
    std::printf(
        "attempt %d: %d elements checked, %d skipped at a kink, %zu "
        "mismatches\n",
        attempt, checked, kinks, mismatches.size());
    EXPECT_EQ(checked + kinks, 6 * 7 + 7 + 7 * 5 + 5 + 5 * 4 + 4);
    if (mismatches.empty() && kinks <= 35) break;
  }
  // gelu is smooth: only strong curvature can make the two steps disagree.
  if (std::string(GetParam()) == "gelu") {
    EXPECT_LE(kinks, 3);
  }
  EXPECT_LE(kinks, 35);  // seen up to 20 in 100 random runs
  for (const std::string& m : mismatches) ADD_FAILURE() << m;

  MNT_Model_Destroy_Args md{};
  md.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
  md.model = ca.model;
  EXPECT_EQ(Take(MlpPluginApi(), m->Model_Destroy(&md)), "");
  for (auto& w : weights) w.Reset();
  for (auto& g : grads) g.Reset();
  x_buf.Reset();
  t_buf.Reset();
  loss_buf.Reset();
  MNT_Backend_Destroy_Args bd{};
  bd.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  bd.backend = ba.backend;
  EXPECT_EQ(Take(bp, bp->backend->Backend_Destroy(&bd)), "");
}

// gelu is smooth everywhere; relu is checked away from its kink.
INSTANTIATE_TEST_SUITE_P(Activations, FiniteDifferenceTest,
                         ::testing::Values("gelu", "relu"));

}  // namespace
}  // namespace mnt::mlp

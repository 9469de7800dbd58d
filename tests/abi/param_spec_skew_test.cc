// ABI 1.15's stacked_dims (MNT_Model_GetParamSpec_Args) across versions,
// with the in-tree GPT-2 on the CPU backend:
//  * today's model reports its blocks' [L, ...] tensors as one stacked dim
//    and its embeddings and final norm as unstacked;
//  * a model that never writes the field (a 1.14 binary) reads as 0, and a
//    value leaving a copy no dims is refused in one line.
#include <map>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "models/gpt2/gpt2_model.h"
#include "plugins/abi/mantissa.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/model_client.h"

namespace mnt {
namespace {

constexpr int kLayers = 2;

void Check(const sdk::Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }

// --- Models at other minors: GPT-2 with its GetParamSpec wrapped. ---
MNT_Model_Api g_model_api;
MNT_Plugin_Api g_model_plugin;
int32_t g_forced_stacked_dims = 0;

// A 1.14 binary: it writes the struct up to weight_decay and never the
// field after it (which the host set to 0).
MNT_Error* GetParamSpecAs114(MNT_Model_GetParamSpec_Args* args) {
  const int32_t host_set = args->stacked_dims;
  MNT_Error* e = gpt2::Gpt2PluginApi()->model->Model_GetParamSpec(args);
  args->stacked_dims = host_set;
  return e;
}

// A model writing g_forced_stacked_dims whatever its tensors are.
MNT_Error* GetParamSpecForced(MNT_Model_GetParamSpec_Args* args) {
  MNT_Error* e = gpt2::Gpt2PluginApi()->model->Model_GetParamSpec(args);
  if (e == nullptr) args->stacked_dims = g_forced_stacked_dims;
  return e;
}

const MNT_Plugin_Api* Gpt2With(MNT_Model_GetParamSpec* get_param_spec, int32_t minor) {
  g_model_plugin = *gpt2::Gpt2PluginApi();
  g_model_plugin.abi_version.minor_version = minor;
  g_model_api = *g_model_plugin.model;
  g_model_api.Model_GetParamSpec = get_param_spec;
  g_model_plugin.model = &g_model_api;
  return &g_model_plugin;
}

// One GPT-2 (2 layers) on one CPU backend instance.
class Gpt2Harness {
 public:
  explicit Gpt2Harness(const MNT_Plugin_Api* model) {
    Check(sdk::BackendInstance::Create(cpu::CpuBackendPluginApi(), "threads=1", &backend_));
    sdk::ModelSetup setup;
    setup.options = "n_layer=" + std::to_string(kLayers) + ",n_head=2,d_model=16,seq_len=8";
    setup.backend = &backend_->client();
    setup.data_spec.input_dtype = MNT_DTYPE_I32;
    setup.data_spec.input_rank = 1;
    setup.data_spec.input_dims[0] = 8;
    setup.data_spec.num_classes = 40;
    setup.data_spec.targets_per_example = 8;
    setup.precision.weight_dtype = MNT_DTYPE_F32;
    setup.precision.gradient_dtype = MNT_DTYPE_F32;
    setup.precision.activation_dtype = MNT_DTYPE_F32;
    setup.precision.matmul_compute = MNT_COMPUTE_F32;
    setup.max_batch_size = 2;
    Check(sdk::ModelClient::Create(model, setup, &model_));
  }
  ~Gpt2Harness() { model_.Reset(); }
  sdk::ModelClient& model() { return model_; }

  // Every parameter's stacked_dims by name, as the client reads them.
  std::map<std::string, int32_t> StackedDims() {
    std::map<std::string, int32_t> out;
    int64_t n = 0;
    Check(model_.ParamCount(&n));
    for (int64_t i = 0; i < n; ++i) {
      sdk::ParamSpec spec;
      Check(model_.GetParamSpec(i, &spec));
      out[spec.name] = spec.stacked_dims;
    }
    return out;
  }

 private:
  std::unique_ptr<sdk::BackendInstance> backend_;
  sdk::ModelClient model_;
};

TEST(ParamSpecSkewTest, Gpt2StacksItsBlocksTensorsByLayer) {
  Gpt2Harness h(gpt2::Gpt2PluginApi());
  const std::map<std::string, int32_t> stacked = h.StackedDims();
  ASSERT_EQ(stacked.size(), 16u);
  for (const auto& [name, dims] : stacked) {
    const bool unstacked = name == "wte" || name == "wpe" || name == "lnfw" || name == "lnfb";
    EXPECT_EQ(dims, unstacked ? 0 : 1) << name;
  }
}

TEST(ParamSpecSkewTest, A114ModelReadsAsUnstacked) {
  Gpt2Harness h(Gpt2With(GetParamSpecAs114, 14));
  for (const auto& [name, dims] : h.StackedDims()) EXPECT_EQ(dims, 0) << name;
}

TEST(ParamSpecSkewTest, StackedDimsLeavingACopyNoDimsAreRefused) {
  for (const int32_t bad : {-1, 2, 3}) {
    g_forced_stacked_dims = bad;
    Gpt2Harness h(Gpt2With(GetParamSpecForced, MNT_ABI_MINOR));
    // Parameter 2 is ln1w, [L, C]: rank 2, so 0 and 1 are its valid values.
    sdk::ParamSpec spec;
    const sdk::Status s = h.model().GetParamSpec(2, &spec);
    ASSERT_FALSE(s.ok()) << "stacked_dims " << bad << " was accepted";
    EXPECT_NE(s.message().find("stacked_dims"), std::string::npos) << s.message();
  }
  g_forced_stacked_dims = 1;
  Gpt2Harness h(Gpt2With(GetParamSpecForced, MNT_ABI_MINOR));
  sdk::ParamSpec spec;
  Check(h.model().GetParamSpec(2, &spec));
  EXPECT_EQ(spec.stacked_dims, 1);
}

}  // namespace
}  // namespace mnt

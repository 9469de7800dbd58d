// ABI 1.15's stacked_dims and 1.16's role (MNT_Model_GetParamSpec_Args)
// across versions, with the in-tree GPT-2 on the CPU backend:
//  * today's model reports its blocks' [L, ...] tensors as one stacked dim
//    and its embeddings and final norm as unstacked, and its token and
//    position tables as EMBEDDINGs;
//  * a model that never writes a field (a 1.14 or 1.15 binary) reads as 0
//    and OTHER, and a value outside the field's range is refused in one
//    line;
//  * a host older than the field (a 1.14 or 1.15 struct_size, as it loads
//    a source built with -DMNT_ABI_SOURCE_MINOR=14) gets its answer, and
//    the SDK writes nothing past the struct it was handed.
#include <cstring>
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
int32_t g_forced_role = MNT_PARAM_ROLE_OTHER;

// A 1.14 binary: it writes the struct up to weight_decay and never the
// field after it (which the host set to 0).
MNT_Error* GetParamSpecAs114(MNT_Model_GetParamSpec_Args* args) {
  const int32_t host_set = args->stacked_dims;
  MNT_Error* e = gpt2::Gpt2PluginApi()->model->Model_GetParamSpec(args);
  args->stacked_dims = host_set;
  return e;
}

// A 1.15 binary: it writes stacked_dims and never role.
MNT_Error* GetParamSpecAs115(MNT_Model_GetParamSpec_Args* args) {
  const MNT_ParamRole host_set = args->role;
  MNT_Error* e = gpt2::Gpt2PluginApi()->model->Model_GetParamSpec(args);
  args->role = host_set;
  return e;
}

// A model writing g_forced_role (any int32) whatever its tensors are.
MNT_Error* GetParamSpecForcedRole(MNT_Model_GetParamSpec_Args* args) {
  MNT_Error* e = gpt2::Gpt2PluginApi()->model->Model_GetParamSpec(args);
  if (e == nullptr) std::memcpy(&args->role, &g_forced_role, sizeof(g_forced_role));
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

  // Every parameter's spec by name, as the client reads them.
  std::map<std::string, sdk::ParamSpec> Specs() {
    std::map<std::string, sdk::ParamSpec> out;
    int64_t n = 0;
    Check(model_.ParamCount(&n));
    for (int64_t i = 0; i < n; ++i) {
      sdk::ParamSpec spec;
      Check(model_.GetParamSpec(i, &spec));
      out[spec.name] = spec;
    }
    return out;
  }
  std::map<std::string, int32_t> StackedDims() {
    std::map<std::string, int32_t> out;
    for (const auto& [name, spec] : Specs()) out[name] = spec.stacked_dims;
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

TEST(ParamSpecSkewTest, Gpt2NamesItsTablesEmbeddings) {
  Gpt2Harness h(gpt2::Gpt2PluginApi());
  const std::map<std::string, sdk::ParamSpec> specs = h.Specs();
  ASSERT_EQ(specs.size(), 16u);
  for (const auto& [name, spec] : specs) {
    const bool table = name == "wte" || name == "wpe";
    EXPECT_EQ(spec.role, table ? MNT_PARAM_ROLE_EMBEDDING : MNT_PARAM_ROLE_OTHER) << name;
  }
}

TEST(ParamSpecSkewTest, A115ModelReadsAsOtherAndKeepsItsStacking) {
  Gpt2Harness h(Gpt2With(GetParamSpecAs115, 15));
  for (const auto& [name, spec] : h.Specs()) {
    EXPECT_EQ(spec.role, MNT_PARAM_ROLE_OTHER) << name;
    const bool unstacked = name == "wte" || name == "wpe" || name == "lnfw" || name == "lnfb";
    EXPECT_EQ(spec.stacked_dims, unstacked ? 0 : 1) << name;
  }
}

TEST(ParamSpecSkewTest, ARoleOutsideTheListIsRefused) {
  for (const int32_t bad : {-1, 2, 1000}) {
    g_forced_role = bad;
    Gpt2Harness h(Gpt2With(GetParamSpecForcedRole, MNT_ABI_MINOR));
    sdk::ParamSpec spec;
    const sdk::Status s = h.model().GetParamSpec(0, &spec);
    ASSERT_FALSE(s.ok()) << "role " << bad << " was accepted";
    EXPECT_NE(s.message().find("MNT_ParamRole"), std::string::npos) << s.message();
  }
}

// What an older host hands the SDK's GetParamSpec: its own struct_size,
// with the bytes after it belonging to something else (here 0x5A).
TEST(ParamSpecSkewTest, AnOlderHostsShorterStructIsAnsweredWithinIt) {
  Gpt2Harness h(gpt2::Gpt2PluginApi());
  const MNT_Model_Api* api = gpt2::Gpt2PluginApi()->model;
  for (const size_t size : {size_t{MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_14},
                            size_t{MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_15}}) {
    MNT_Model_GetParamSpec_Args a;
    std::memset(&a, 0x5A, sizeof(a));
    a.struct_size = size;
    a.extension_start = nullptr;
    a.model = h.model().get();
    a.index = 0;  // wte: unstacked, an embedding
    MNT_Error* e = api->Model_GetParamSpec(&a);
    ASSERT_EQ(e, nullptr) << "struct_size " << size << " was refused";
    EXPECT_STREQ(a.name, "wte");
    EXPECT_EQ(a.weight_decay, 1);
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&a);
    for (size_t i = size; i < sizeof(a); ++i) {
      EXPECT_EQ(bytes[i], 0x5A) << "byte " << i << " past struct_size " << size << " written";
    }
    if (size >= MNT_Model_GetParamSpec_Args_STRUCT_SIZE_1_15) {
      EXPECT_EQ(a.stacked_dims, 0);
    }
  }
}

}  // namespace
}  // namespace mnt

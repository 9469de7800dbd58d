// Unit tests of PluginRegistry's validation and lookup with plugins built in
// memory. Loading real .so files (and ABI 1.0 compatibility) is covered in
// tests/abi.
#include "trainer/loader/plugin_registry.h"

#include <cstdlib>
#include <fstream>
#include <vector>

#include <unistd.h>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/precision_client.h"
#include "plugins/sdk/status.h"

namespace mnt::trainer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int g_live_errors = 0;
int g_initialize_calls = 0;

MNT_Error* NewError(MNT_ErrorCode code, const char* message) {
  ++g_live_errors;
  return new MNT_Error{code, message};  // any code, even OK (a plugin bug)
}
void CountingErrorDestroy(MNT_Error* e) {
  if (e != nullptr) --g_live_errors;
  sdk::ErrorDestroy(e);
}

template <typename Args>
MNT_Error* Noop(Args*) {
  return nullptr;
}

MNT_Error* InitializeOk() {
  ++g_initialize_calls;
  return nullptr;
}
MNT_Error* InitializeFails() {
  ++g_initialize_calls;
  return NewError(MNT_ERROR_UNAVAILABLE, "no device found");
}

MNT_Backend_Api MakeBackendApi() {
  MNT_Backend_Api b{};
  b.struct_size = MNT_Backend_Api_STRUCT_SIZE;
  b.Backend_Create = &Noop<MNT_Backend_Create_Args>;
  b.Backend_Destroy = &Noop<MNT_Backend_Destroy_Args>;
  b.Backend_GetInfo = &Noop<MNT_Backend_GetInfo_Args>;
  b.Memory_Allocate = &Noop<MNT_Memory_Allocate_Args>;
  b.Memory_Free = &Noop<MNT_Memory_Free_Args>;
  b.Memory_Copy = &Noop<MNT_Memory_Copy_Args>;
  b.Memory_GetStats = &Noop<MNT_Memory_GetStats_Args>;
  b.Memory_ResetPeak = &Noop<MNT_Memory_ResetPeak_Args>;
  b.Backend_Synchronize = &Noop<MNT_Backend_Synchronize_Args>;
  b.Backend_GetOpSupport = &Noop<MNT_Backend_GetOpSupport_Args>;
  b.Backend_Run = &Noop<MNT_Backend_Run_Args>;
  b.Event_Create = &Noop<MNT_Event_Create_Args>;
  b.Event_Record = &Noop<MNT_Event_Record_Args>;
  b.Event_ElapsedTime = &Noop<MNT_Event_ElapsedTime_Args>;
  b.Event_Destroy = &Noop<MNT_Event_Destroy_Args>;
  return b;
}

MNT_Precision_Api MakePrecisionApi() {
  MNT_Precision_Api p{};
  p.struct_size = MNT_Precision_Api_STRUCT_SIZE;
  p.Precision_GetPolicy = &Noop<MNT_Precision_GetPolicy_Args>;
  p.Precision_GetOpClassPolicy = &Noop<MNT_Precision_GetOpClassPolicy_Args>;
  p.Precision_GetMemoryPlan = &Noop<MNT_Precision_GetMemoryPlan_Args>;
  p.LossScaler_Create = &Noop<MNT_LossScaler_Create_Args>;
  p.LossScaler_Destroy = &Noop<MNT_LossScaler_Destroy_Args>;
  p.LossScaler_GetState = &Noop<MNT_LossScaler_GetState_Args>;
  p.LossScaler_SetState = &Noop<MNT_LossScaler_SetState_Args>;
  p.LossScaler_Update = &Noop<MNT_LossScaler_Update_Args>;
  return p;
}

MNT_Model_Api MakeModelApi() {
  MNT_Model_Api m{};
  m.struct_size = MNT_Model_Api_STRUCT_SIZE;
  m.Model_Create = &Noop<MNT_Model_Create_Args>;
  m.Model_Destroy = &Noop<MNT_Model_Destroy_Args>;
  m.Model_GetParamCount = &Noop<MNT_Model_GetParamCount_Args>;
  m.Model_GetParamSpec = &Noop<MNT_Model_GetParamSpec_Args>;
  m.Model_Forward = &Noop<MNT_Model_Forward_Args>;
  m.Model_Backward = &Noop<MNT_Model_Backward_Args>;
  return m;
}

MNT_Plugin_Api MakePluginApi(MNT_PluginKind kind, const char* name) {
  MNT_Plugin_Api api{};
  api.struct_size = MNT_Plugin_Api_STRUCT_SIZE;
  api.abi_version.struct_size = MNT_Api_Version_STRUCT_SIZE;
  api.abi_version.major_version = MNT_ABI_MAJOR;
  api.abi_version.minor_version = MNT_ABI_MINOR;
  api.kind = kind;
  api.name = name;
  api.description = "in-memory test plugin";
  api.Error_Destroy = &CountingErrorDestroy;
  api.Error_Message = &sdk::ErrorMessage;
  api.Error_GetCode = &sdk::ErrorGetCode;
  return api;
}

class PluginRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_live_errors = 0;
    g_initialize_calls = 0;
    backend_ = MakeBackendApi();
    precision_ = MakePrecisionApi();
    model_ = MakeModelApi();
    plugin_ = MakePluginApi(MNT_PLUGIN_KIND_BACKEND, "fake");
    plugin_.backend = &backend_;
  }

  // Registers plugin_ and returns the refusal message ("" when accepted).
  std::string Refusal() {
    absl::Status s = registry_.RegisterStatic(&plugin_, "static:fake");
    EXPECT_EQ(s.message().find('\n'), absl::string_view::npos)
        << "message must be one line: " << s;
    return std::string(s.message());
  }

  MNT_Backend_Api backend_;
  MNT_Precision_Api precision_;
  MNT_Model_Api model_;
  MNT_Plugin_Api plugin_;
  PluginRegistry registry_{{}};
};

TEST_F(PluginRegistryTest, AcceptsACompleteBackendAndFindsItByName) {
  plugin_.Plugin_Initialize = &InitializeOk;
  ASSERT_EQ(Refusal(), "");
  EXPECT_EQ(g_initialize_calls, 1);
  auto got = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "fake");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->api, &plugin_);
  EXPECT_EQ((*got)->origin, "static:fake");
  EXPECT_EQ((*got)->handle, nullptr);
  EXPECT_TRUE(HasEvents((*got)->api));
  EXPECT_THAT(registry_.Available(MNT_PLUGIN_KIND_BACKEND), ElementsAre("fake"));
  EXPECT_TRUE(registry_.Available(MNT_PLUGIN_KIND_MODEL).empty());
  // Registering the same plugin again is a no-op and does not re-initialize.
  ASSERT_EQ(Refusal(), "");
  EXPECT_EQ(g_initialize_calls, 1);
}

TEST_F(PluginRegistryTest, AcceptsPrecisionAndModelPlugins) {
  MNT_Plugin_Api precision = MakePluginApi(MNT_PLUGIN_KIND_PRECISION, "fp16");
  precision.precision = &precision_;
  MNT_Plugin_Api model = MakePluginApi(MNT_PLUGIN_KIND_MODEL, "mlp");
  model.model = &model_;
  EXPECT_TRUE(registry_.RegisterStatic(&precision, "static:fp16").ok());
  EXPECT_TRUE(registry_.RegisterStatic(&model, "static:mlp").ok());
  EXPECT_TRUE(registry_.Get(MNT_PLUGIN_KIND_PRECISION, "fp16").ok());
  EXPECT_TRUE(registry_.Get(MNT_PLUGIN_KIND_MODEL, "mlp").ok());
  EXPECT_FALSE(HasEvents(&precision));
  // Names are per kind: a model may share a backend's name.
  MNT_Plugin_Api model_fake = MakePluginApi(MNT_PLUGIN_KIND_MODEL, "fake");
  model_fake.model = &model_;
  EXPECT_TRUE(registry_.RegisterStatic(&model_fake, "static:m").ok());
  EXPECT_EQ(Refusal(), "");
}

TEST_F(PluginRegistryTest, RefusesNullApi) {
  EXPECT_EQ(registry_.RegisterStatic(nullptr, "static:x").message(),
            "static:x: MNT_GetPluginApi returned NULL");
}

TEST_F(PluginRegistryTest, RefusesTruncatedPluginApi) {
  plugin_.struct_size = 16;
  EXPECT_EQ(Refusal(),
            "static:fake: MNT_Plugin_Api struct_size 16 is smaller than the "
            "120 bytes of ABI 1.0");
  plugin_.struct_size = MNT_Plugin_Api_STRUCT_SIZE - 8;  // version readable
  EXPECT_EQ(Refusal(),
            "static:fake: MNT_Plugin_Api struct_size 112 is smaller than the "
            "120 bytes of ABI 1.0");
}

TEST_F(PluginRegistryTest, RefusesOtherMajorAndNewerMinor) {
  plugin_.abi_version.major_version = 2;
  plugin_.abi_version.minor_version = 0;
  // The host's version from the header, so an ABI minor bump needs no edit.
  const std::string host = "1." + std::to_string(MNT_ABI_MINOR);
  EXPECT_EQ(Refusal(),
            "static:fake: plugin built against ABI 2.0, incompatible with this "
            "trainer's " + host + " (major versions differ); rebuild the plugin against "
            "ABI 1.x");
  plugin_.abi_version.major_version = 1;
  plugin_.abi_version.minor_version = MNT_ABI_MINOR + 1;
  EXPECT_EQ(Refusal(),
            "static:fake: plugin built against ABI 1." + std::to_string(MNT_ABI_MINOR + 1) +
                ", newer than this trainer's " + host + "; upgrade the trainer");
  plugin_.abi_version.minor_version = 0;  // older minors load
  EXPECT_EQ(Refusal(), "");
}

// ABI 1.9: the extension chain is checked at load (sdk::CheckExtensionChain,
// its cases in //plugins/sdk:extension_chain_test); a malformed one is
// refused in one line, a well-formed one with an unknown type loads.
TEST_F(PluginRegistryTest, RefusesAMalformedExtensionChain) {
  MNT_Extension_Header a{}, b{};
  a.base = {MNT_Extension_Header_STRUCT_SIZE, static_cast<MNT_ExtensionType>(77), &b.base};
  a.name = "a";
  a.version = 1;
  b = a;
  b.base.next = &a.base;  // a cycle
  plugin_.extension_start = &a.base;
  EXPECT_EQ(Refusal(),
            "static:fake: backend plugin 'fake' has a malformed extension chain: "
            "extension chain is longer than 64 links (a cycle?)");
  MNT_Capabilities_Extension caps = sdk::MakeCapabilitiesExtension(nullptr, 0);
  caps.header.base.struct_size = MNT_Extension_Header_STRUCT_SIZE;
  plugin_.extension_start = &caps.header.base;
  EXPECT_EQ(Refusal(),
            "static:fake: backend plugin 'fake' has a malformed extension chain: "
            "extension 'capabilities': struct_size 36 is smaller than the 56 bytes of its "
            "version 1");
  b.base.next = nullptr;  // a -> b: unknown types, skipped
  plugin_.extension_start = &a.base;
  EXPECT_EQ(Refusal(), "");
}

// The collectives extension's table rule (sdk::CheckCollectivesTable, the
// one sdk::CollectivesClient::Find applies): a NULL version-1 call is
// refused at load in one line, not found later through a NULL pointer; a
// version-2 table without Collectives_Wait loads (hosts run its
// collectives with Collectives_Run; conformance fails it).
TEST_F(PluginRegistryTest, RefusesACollectivesExtensionWithoutItsCalls) {
  MNT_Collectives_Extension coll = sdk::MakeCollectivesExtension(
      &Noop<MNT_Collectives_GetUniqueId_Args>, &Noop<MNT_Communicator_Create_Args>,
      &Noop<MNT_Communicator_Destroy_Args>, nullptr, &Noop<MNT_Collectives_Start_Args>,
      nullptr);
  plugin_.extension_start = &coll.header.base;
  EXPECT_EQ(Refusal(),
            "static:fake: backend plugin 'fake' has a malformed extension chain: extension "
            "'collectives': Collectives_Run is NULL (version 1's four calls are required)");
  coll.Collectives_Run = &Noop<MNT_Collectives_Run_Args>;
  EXPECT_EQ(Refusal(), "") << "a version-2 table without Collectives_Wait loads";
}

TEST_F(PluginRegistryTest, RefusesInvalidKindAndNames) {
  plugin_.kind = static_cast<MNT_PluginKind>(7);
  EXPECT_EQ(Refusal(), "static:fake: invalid plugin kind 7");
  plugin_.kind = MNT_PLUGIN_KIND_BACKEND;
  plugin_.name = "";
  EXPECT_EQ(Refusal(), "static:fake: backend plugin name is empty");
  plugin_.name = nullptr;
  EXPECT_EQ(Refusal(), "static:fake: backend plugin name is empty");
  plugin_.name = "../evil";
  EXPECT_THAT(Refusal(), HasSubstr("has characters outside [A-Za-z0-9_-]"));
}

TEST_F(PluginRegistryTest, RefusesMissingOrExtraSubApi) {
  plugin_.backend = nullptr;
  EXPECT_EQ(Refusal(),
            "static:fake: backend plugin 'fake' has a NULL backend API");
  plugin_.backend = &backend_;
  plugin_.model = &model_;
  EXPECT_EQ(Refusal(),
            "static:fake: backend plugin 'fake' also sets the model API");
}

TEST_F(PluginRegistryTest, RefusesNullRequiredFunctions) {
  plugin_.Error_Message = nullptr;
  EXPECT_EQ(Refusal(),
            "static:fake: required function MNT_Plugin_Api.Error_Message is "
            "NULL");
  plugin_.Error_Message = &sdk::ErrorMessage;
  backend_.Backend_Run = nullptr;
  EXPECT_EQ(Refusal(),
            "static:fake: required function MNT_Backend_Api.Backend_Run is "
            "NULL");

  MNT_Plugin_Api precision = MakePluginApi(MNT_PLUGIN_KIND_PRECISION, "p");
  precision.precision = &precision_;
  precision_.LossScaler_Update = nullptr;
  EXPECT_THAT(registry_.RegisterStatic(&precision, "static:p").message(),
              HasSubstr("MNT_Precision_Api.LossScaler_Update is NULL"));
  MNT_Plugin_Api model = MakePluginApi(MNT_PLUGIN_KIND_MODEL, "m");
  model.model = &model_;
  model_.Model_Backward = nullptr;
  EXPECT_THAT(registry_.RegisterStatic(&model, "static:m").message(),
              HasSubstr("MNT_Model_Api.Model_Backward is NULL"));
}

TEST_F(PluginRegistryTest, RefusesTruncatedSubApi) {
  backend_.struct_size = MNT_Backend_Api_STRUCT_SIZE_1_0 - 8;
  EXPECT_EQ(Refusal(),
            "static:fake: MNT_Backend_Api struct_size 96 is smaller than the "
            "104 bytes of ABI 1.0");
}

TEST_F(PluginRegistryTest, EventsAreOptionalButAllOrNothing) {
  backend_.Event_Record = nullptr;
  EXPECT_THAT(Refusal(), HasSubstr("some but not all of the Event_*"));
  backend_.Event_Create = nullptr;
  backend_.Event_ElapsedTime = nullptr;
  backend_.Event_Destroy = nullptr;
  ASSERT_EQ(Refusal(), "");
  EXPECT_FALSE(HasEvents(&plugin_));
}

TEST_F(PluginRegistryTest, A10BackendNeverHasEventsEvenWithBytesBeyondIt) {
  // The Event_* slots hold non-NULL garbage past struct_size: never read.
  backend_.struct_size = MNT_Backend_Api_STRUCT_SIZE_1_0;
  plugin_.abi_version.minor_version = 0;
  ASSERT_EQ(Refusal(), "");
  EXPECT_FALSE(HasEvents(&plugin_));
  backend_.struct_size = MNT_Backend_Api_STRUCT_SIZE;
  EXPECT_TRUE(HasEvents(&plugin_));
}

TEST_F(PluginRegistryTest, StepMarkersAreOptionalButBothOrNeither) {
  // Neither (NULL, as every other test here registers): no markers.
  EXPECT_FALSE(sdk::BackendClient(&plugin_, nullptr).HasStepMarkers());
  backend_.Backend_StepBegin = &Noop<MNT_Backend_StepBegin_Args>;
  EXPECT_THAT(Refusal(), HasSubstr("only one of Backend_StepBegin and Backend_StepEnd"));
  backend_.Backend_StepEnd = &Noop<MNT_Backend_StepEnd_Args>;
  ASSERT_EQ(Refusal(), "");
  EXPECT_TRUE(sdk::BackendClient(&plugin_, nullptr).HasStepMarkers());
}

TEST_F(PluginRegistryTest, A16BackendNeverHasStepMarkersEvenWithBytesBeyondIt) {
  // Only StepBegin set, past a 1.6 table's struct_size: never read, so no
  // refusal and no markers.
  backend_.Backend_StepBegin = &Noop<MNT_Backend_StepBegin_Args>;
  backend_.struct_size = MNT_Backend_Api_STRUCT_SIZE_1_6;
  plugin_.abi_version.minor_version = 6;
  ASSERT_EQ(Refusal(), "");
  backend_.Backend_StepEnd = &Noop<MNT_Backend_StepEnd_Args>;
  EXPECT_FALSE(sdk::BackendClient(&plugin_, nullptr).HasStepMarkers());
}

int g_scaling_recipe_calls = 0;
MNT_Error* DelayedScalingRecipe(MNT_Precision_GetScalingRecipe_Args* a) {
  ++g_scaling_recipe_calls;
  a->recipe = MNT_SCALING_RECIPE_DELAYED;
  a->forward_dtype = MNT_DTYPE_F8_E4M3;
  a->backward_dtype = MNT_DTYPE_F8_E5M2;
  a->history_length = 16;
  a->amax_algo = MNT_AMAX_ALGO_MAX;
  return nullptr;
}

// ABI 1.10 appended the optional Precision_GetScalingRecipe: precision
// tables of the 1.0, 1.9 and 1.10 sizes are all accepted, and a host reads
// the slot only when the table holds it (a shorter table's bytes beyond
// struct_size are never read, whatever they hold).
TEST_F(PluginRegistryTest, PrecisionTablesOf10And19And110SizesAreAccepted) {
  struct Case {
    const char* name;
    size_t size;
    int minor;
    bool reads_slot;
  } cases[] = {
      {"p1_0", MNT_Precision_Api_STRUCT_SIZE_1_0, 0, false},
      {"p1_9", MNT_Precision_Api_STRUCT_SIZE_1_9, 9, false},
      {"p1_10", MNT_Precision_Api_STRUCT_SIZE, 10, true},
  };
  static_assert(MNT_Precision_Api_STRUCT_SIZE_1_9 < MNT_Precision_Api_STRUCT_SIZE);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    MNT_Precision_Api table = MakePrecisionApi();
    table.struct_size = c.size;
    table.Precision_GetScalingRecipe = &DelayedScalingRecipe;  // past a short table
    MNT_Plugin_Api plugin = MakePluginApi(MNT_PLUGIN_KIND_PRECISION, c.name);
    plugin.abi_version.minor_version = c.minor;
    plugin.precision = &table;
    ASSERT_TRUE(registry_.RegisterStatic(&plugin, std::string("static:") + c.name).ok());

    g_scaling_recipe_calls = 0;
    const sdk::PrecisionClient client(&plugin);
    EXPECT_EQ(client.HasScalingRecipe(), c.reads_slot);
    MNT_Precision_GetScalingRecipe_Args r;
    r.history_length = 99;  // overwritten either way
    ASSERT_TRUE(client.GetScalingRecipe("format=hybrid", &r).ok());
    EXPECT_EQ(g_scaling_recipe_calls, c.reads_slot ? 1 : 0);
    EXPECT_EQ(r.struct_size, MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE);
    EXPECT_EQ(r.precision_options, nullptr);  // borrowed for the call only
    EXPECT_EQ(r.recipe, c.reads_slot ? MNT_SCALING_RECIPE_DELAYED : MNT_SCALING_RECIPE_NONE);
    EXPECT_EQ(r.history_length, c.reads_slot ? 16 : 0);
    EXPECT_TRUE(sdk::CheckScalingRecipe(r).ok());

    // A 1.10 table with the slot NULL: no scaled formats, nothing called.
    table.Precision_GetScalingRecipe = nullptr;
    g_scaling_recipe_calls = 0;
    EXPECT_FALSE(client.HasScalingRecipe());
    ASSERT_TRUE(client.GetScalingRecipe("", &r).ok());
    EXPECT_EQ(r.recipe, MNT_SCALING_RECIPE_NONE);
    EXPECT_EQ(g_scaling_recipe_calls, 0);
  }
}

TEST(ScalingRecipeCheckTest, RefusesAnswersOutsideTheAbisRanges) {
  MNT_Precision_GetScalingRecipe_Args ok{};
  ok.struct_size = MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE;
  ok.recipe = MNT_SCALING_RECIPE_DELAYED;
  ok.forward_dtype = MNT_DTYPE_F8_E4M3;
  ok.backward_dtype = MNT_DTYPE_F8_E5M2;
  ok.history_length = 1;
  ok.amax_algo = MNT_AMAX_ALGO_MOST_RECENT;
  EXPECT_TRUE(sdk::CheckScalingRecipe(ok).ok());
  auto message = [](MNT_Precision_GetScalingRecipe_Args a) {
    sdk::Status s = sdk::CheckScalingRecipe(a);
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  auto with = [&](auto edit) {
    MNT_Precision_GetScalingRecipe_Args a = ok;
    edit(a);
    return message(a);
  };
  EXPECT_THAT(with([](auto& a) { a.recipe = static_cast<MNT_ScalingRecipe>(7); }),
              HasSubstr("unknown recipe 7"));
  EXPECT_THAT(with([](auto& a) { a.forward_dtype = MNT_DTYPE_BF16; }),
              HasSubstr("forward_dtype bf16 and backward_dtype f8_e5m2 must be"));
  EXPECT_THAT(with([](auto& a) { a.backward_dtype = MNT_DTYPE_INVALID; }),
              HasSubstr("backward_dtype invalid"));
  EXPECT_THAT(with([](auto& a) { a.margin = -1; }), HasSubstr("margin -1 is negative"));
  EXPECT_THAT(with([](auto& a) { a.history_length = 0; }),
              HasSubstr("DELAYED with history_length 0"));
  EXPECT_THAT(with([](auto& a) { a.amax_algo = MNT_AMAX_ALGO_INVALID; }),
              HasSubstr("DELAYED with amax_algo 0"));
  // CURRENT does not use the history; NONE uses nothing.
  MNT_Precision_GetScalingRecipe_Args current = ok;
  current.recipe = MNT_SCALING_RECIPE_CURRENT;
  current.history_length = 0;
  current.amax_algo = MNT_AMAX_ALGO_INVALID;
  EXPECT_TRUE(sdk::CheckScalingRecipe(current).ok());
  MNT_Precision_GetScalingRecipe_Args none{};
  none.margin = -5;
  EXPECT_TRUE(sdk::CheckScalingRecipe(none).ok());
}

TEST_F(PluginRegistryTest, RefusesDuplicateNamesFromDifferentOrigins) {
  ASSERT_EQ(Refusal(), "");
  MNT_Plugin_Api other = plugin_;
  absl::Status s = registry_.RegisterStatic(&other, "static:other");
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "duplicate backend plugin 'fake': static:fake and static:other");
}

TEST_F(PluginRegistryTest, RefusesAPluginWhoseInitializeFails) {
  plugin_.Plugin_Initialize = &InitializeFails;
  absl::Status s = registry_.RegisterStatic(&plugin_, "static:fake");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "static:fake: Plugin_Initialize failed: no device found");
  EXPECT_EQ(g_initialize_calls, 1);
  EXPECT_EQ(g_live_errors, 0) << "the initialize error was not destroyed";
  EXPECT_FALSE(registry_.Get(MNT_PLUGIN_KIND_BACKEND, "fake").ok());
}

TEST_F(PluginRegistryTest, StatusFromPluginErrorKeepsCodeMessageAndFrees) {
  EXPECT_TRUE(StatusFromPluginError(&plugin_, nullptr).ok());
  absl::Status s = StatusFromPluginError(
      &plugin_, NewError(MNT_ERROR_INVALID_ARGUMENT, "GEMM: bad shape"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "GEMM: bad shape");
  EXPECT_EQ(g_live_errors, 0);
  // An error object claiming OK is still a failure.
  s = StatusFromPluginError(&plugin_, NewError(MNT_ERROR_OK, "odd"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(g_live_errors, 0);
}

TEST_F(PluginRegistryTest, UnknownNameListsWhatIsAvailable) {
  ASSERT_EQ(Refusal(), "");
  auto got = registry_.Get(MNT_PLUGIN_KIND_BACKEND, "cuda");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(),
              HasSubstr("unknown backend 'cuda' (available: fake;"));
  EXPECT_EQ(registry_.Get(MNT_PLUGIN_KIND_BACKEND, "a/b").status().code(),
            absl::StatusCode::kInvalidArgument);
}

std::string MakeTempDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  std::string cmd = "mkdir -p '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

TEST(PluginRegistrySearchTest, AvailableScansTheSearchPathByFileName) {
  const std::string a = MakeTempDir("avail_a");
  const std::string b = MakeTempDir("avail_b");
  for (const std::string& f :
       {a + "/mnt_precision_fp16.so", a + "/mnt_backend_cpu.so",
        b + "/mnt_precision_bf16.so", b + "/mnt_precision_fp16.so",
        b + "/libother.so", b + "/mnt_precision_notes.txt"}) {
    std::ofstream(f) << "not a shared object\n";
  }
  PluginRegistry registry({a, b, "/nonexistent/dir"});
  EXPECT_THAT(registry.Available(MNT_PLUGIN_KIND_PRECISION),
              ElementsAre("bf16", "fp16"));
  EXPECT_THAT(registry.Available(MNT_PLUGIN_KIND_BACKEND), ElementsAre("cpu"));
  // The first match on the path is the one loaded, and its failure is
  // reported with the file name.
  auto got = registry.Get(MNT_PLUGIN_KIND_PRECISION, "fp16");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              HasSubstr(a + "/mnt_precision_fp16.so: not a loadable plugin file: "));
}

TEST(PluginRegistrySearchTest, LoadFileReportsMissingFiles) {
  PluginRegistry registry({});
  absl::Status s = registry.LoadFile("/nonexistent/mnt_backend_x.so");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "/nonexistent/mnt_backend_x.so: no such file");
}

TEST(PluginRegistrySearchTest, FlagThenEnvironmentThenExecutableDir) {
  ASSERT_EQ(setenv("MANTISSA_PLUGIN_PATH", "/env/one::/flag/b", 1), 0);
  std::vector<std::string> path =
      PluginRegistry::DefaultSearchPath("/flag/a:/flag/b:", "argv0");
  unsetenv("MANTISSA_PLUGIN_PATH");
  ASSERT_GE(path.size(), 4u);
  EXPECT_EQ(path[0], "/flag/a");
  EXPECT_EQ(path[1], "/flag/b");
  EXPECT_EQ(path[2], "/env/one");  // "/flag/b" again is dropped
  // The executable's directory comes last.
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  std::string exe_dir(exe, n);
  exe_dir = exe_dir.substr(0, exe_dir.rfind('/'));
  EXPECT_EQ(path.back(), exe_dir);
}

}  // namespace
}  // namespace mnt::trainer

// dlopen()s each built mnt_precision_<name>.so (paths in argv, from the BUILD
// rule) and checks its one entry point and a call through it, as the
// trainer's loader will.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"


// As trainer/loader/plugin_file.h: under ASan a plugin stays mapped after
// dlclose, so LeakSanitizer can still see its libraries' globals.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#endif
namespace {

std::vector<std::string> g_paths;

TEST(PrecisionPluginLoadTest, EachSharedObjectLoadsAndAnswers) {
  ASSERT_EQ(g_paths.size(), 5u) << "expected 5 plugin paths as arguments";
  const std::vector<std::string> names = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  for (size_t i = 0; i < g_paths.size(); ++i) {
    SCOPED_TRACE(g_paths[i]);
    void* handle = dlopen(g_paths[i].c_str(), kDlopenFlags);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto* entry = reinterpret_cast<MNT_GetPluginApi_Fn*>(
        dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    // Only the entry symbol is exported: implementation symbols are hidden.
    EXPECT_EQ(dlsym(handle, "_ZN3mnt9precision13Fp16PluginApiEv"), nullptr);
    const MNT_Plugin_Api* api = entry();
    ASSERT_NE(api, nullptr);
    EXPECT_EQ(api->kind, MNT_PLUGIN_KIND_PRECISION);
    EXPECT_EQ(std::string(api->name), names[i]);
    EXPECT_EQ(g_paths[i].find("mnt_precision_" + names[i] + ".so") !=
                  std::string::npos,
              true);
    MNT_LossScaler_Create_Args a{};
    a.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
    a.options = "mode=bogus";
    MNT_Error* e = api->precision->LossScaler_Create(&a);
    ASSERT_NE(e, nullptr);
    EXPECT_NE(std::string(api->Error_Message(e)).find("mode='bogus'"),
              std::string::npos);
    EXPECT_EQ(api->Error_GetCode(e), MNT_ERROR_INVALID_ARGUMENT);
    api->Error_Destroy(e);

    // ABI 1.10: only fp8 declares a scaling recipe (DelayedScaling, HYBRID).
    ASSERT_EQ(api->precision->struct_size, MNT_Precision_Api_STRUCT_SIZE);
    if (names[i] != "fp8") {
      EXPECT_EQ(api->precision->Precision_GetScalingRecipe, nullptr);
    } else {
      ASSERT_NE(api->precision->Precision_GetScalingRecipe, nullptr);
      MNT_Precision_GetScalingRecipe_Args r{};
      r.struct_size = MNT_Precision_GetScalingRecipe_Args_STRUCT_SIZE;
      ASSERT_EQ(api->precision->Precision_GetScalingRecipe(&r), nullptr);
      EXPECT_EQ(r.recipe, MNT_SCALING_RECIPE_DELAYED);
      EXPECT_EQ(r.forward_dtype, MNT_DTYPE_F8_E4M3);
      EXPECT_EQ(r.backward_dtype, MNT_DTYPE_F8_E5M2);
      r.precision_options = "format=e4m3,margin=1";
      ASSERT_EQ(api->precision->Precision_GetScalingRecipe(&r), nullptr);
      EXPECT_EQ(r.backward_dtype, MNT_DTYPE_F8_E4M3);
      EXPECT_EQ(r.margin, 1);
    }
    dlclose(handle);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) g_paths.push_back(argv[i]);
  return RUN_ALL_TESTS();
}

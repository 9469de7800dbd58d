// dlopen()s a built model plugin and checks its one entry point and an error
// coming back through it, as the trainer will. Shared by every in-tree model:
//   plugin_load_test <file.so> <plugin name> <hidden C++ getter symbol>
//                    <valid options>
// The options get ",dropout=0.1" appended, a key no model knows.
#include <dlfcn.h>

#include <string>

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

std::string g_path, g_name, g_getter, g_options;

TEST(ModelPluginLoadTest, SharedObjectLoadsAndAnswers) {
  ASSERT_NE(g_path.find("mnt_model_" + g_name + ".so"), std::string::npos) << g_path;
  void* handle = dlopen(g_path.c_str(), kDlopenFlags);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto* entry = reinterpret_cast<MNT_GetPluginApi_Fn*>(
      dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(dlsym(handle, g_getter.c_str()), nullptr);  // only the entry symbol
  const MNT_Plugin_Api* api = entry();
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->kind, MNT_PLUGIN_KIND_MODEL);
  EXPECT_EQ(std::string(api->name), g_name);
  ASSERT_NE(api->model, nullptr);
  EXPECT_EQ(api->model->struct_size, MNT_Model_Api_STRUCT_SIZE);
  MNT_Model_Create_Args a{};
  a.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
  const std::string options = g_options + ",dropout=0.1";
  a.options = options.c_str();
  MNT_Error* e = api->model->Model_Create(&a);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(api->Error_Message(e)).find("unknown key 'dropout'"),
            std::string::npos);
  api->Error_Destroy(e);
  dlclose(handle);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 5) {
    fprintf(stderr, "usage: %s <file.so> <name> <getter symbol> <options>\n", argv[0]);
    return 2;
  }
  g_path = argv[1];
  g_name = argv[2];
  g_getter = argv[3];
  g_options = argv[4];
  return RUN_ALL_TESTS();
}

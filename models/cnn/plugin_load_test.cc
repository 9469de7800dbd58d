// dlopen()s the built mnt_model_cnn.so (path in argv[1]) and checks its one
// entry point and an error coming back through it, as the trainer will.
#include <dlfcn.h>

#include <string>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"

namespace {

std::string g_path;

TEST(CnnPluginLoadTest, SharedObjectLoadsAndAnswers) {
  ASSERT_NE(g_path.find("mnt_model_cnn.so"), std::string::npos) << g_path;
  void* handle = dlopen(g_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto* entry = reinterpret_cast<MNT_GetPluginApi_Fn*>(
      dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(dlsym(handle, "_ZN3mnt3cnn12CnnPluginApiEv"), nullptr);
  const MNT_Plugin_Api* api = entry();
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->kind, MNT_PLUGIN_KIND_MODEL);
  EXPECT_STREQ(api->name, "cnn");
  ASSERT_NE(api->model, nullptr);
  EXPECT_EQ(api->model->struct_size, MNT_Model_Api_STRUCT_SIZE);
  MNT_Model_Create_Args a{};
  a.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
  a.options = "width=12,dropout=0.1";
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
  if (argc > 1) g_path = argv[1];
  return RUN_ALL_TESTS();
}

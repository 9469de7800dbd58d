#include "plugins/backends/cuda/testing/backend_plugins.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "plugins/backends/cuda/cuda_backend.h"

namespace mnt::cuda::testing {
namespace {

std::vector<std::string> Candidates(const std::string& file, const std::string& name) {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("MANTISSA_PLUGIN_PATH")) {
    std::string dirs = env;
    size_t start = 0;
    while (start <= dirs.size()) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      if (end > start) paths.push_back(dirs.substr(start, end - start) + "/" + file);
      start = end + 1;
    }
  }
  const char* root = std::getenv("TEST_SRCDIR");
  if (root == nullptr || *root == '\0') root = std::getenv("RUNFILES_DIR");
  if (root == nullptr || *root == '\0') root = ".";
  paths.push_back(std::string(root) + "/mantissa/plugins/backends/" + name + "/" + file);
  return paths;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

const MNT_Plugin_Api* Load(const std::string& name) {
  const std::string file = "mnt_backend_" + name + ".so";
  std::string tried;
  for (const std::string& path : Candidates(file, name)) {
    tried += (tried.empty() ? "" : ", ") + path;
    if (!IsFile(path)) continue;
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      std::fprintf(stderr, "gpu test: cannot load %s: %s\n", path.c_str(),
                   why != nullptr ? why : "unknown dlopen error");
      std::exit(1);
    }
    auto* entry = reinterpret_cast<MNT_GetPluginApi_Fn*>(dlsym(handle, MNT_PLUGIN_ENTRY_SYMBOL));
    const MNT_Plugin_Api* api = entry != nullptr ? entry() : nullptr;
    if (api == nullptr || api->backend == nullptr) {
      std::fprintf(stderr, "gpu test: %s is not a Mantissa backend plugin\n", path.c_str());
      std::exit(1);
    }
    std::printf("gpu test: %s backend from %s\n", name.c_str(), path.c_str());
    return api;
  }
  std::fprintf(stderr, "gpu test: %s not found (tried %s)\n", file.c_str(), tried.c_str());
  std::exit(1);
}

}  // namespace

const MNT_Plugin_Api* BackendPlugin(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, const MNT_Plugin_Api*>* loaded =
      new std::map<std::string, const MNT_Plugin_Api*>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  const MNT_Plugin_Api*& api = (*loaded)[name];
  if (api == nullptr) api = Load(name);
  return api;
}

}  // namespace mnt::cuda::testing

namespace mnt::cuda {

const MNT_Plugin_Api* CudaBackendPluginApi() { return testing::BackendPlugin("cuda"); }

}  // namespace mnt::cuda
